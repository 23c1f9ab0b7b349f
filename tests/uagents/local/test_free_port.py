"""free_port: a port below the ephemeral range, free when handed out, never handed out twice."""

from __future__ import annotations

import socket

import pytest

from agent_stream.uagents import free_port


def test_ports_are_bindable_below_the_ephemeral_range_and_never_repeat() -> None:
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    assert all(20000 <= p < 32768 for p in ports)  # outgoing connections never take one
    for p in ports[:20]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", p))


def test_a_port_held_by_another_socket_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_stream.uagents.local import _agents

    base = free_port()
    span = range(base, base + 8) if base + 8 < 32768 else range(base - 8, base)
    monkeypatch.setattr(_agents, "_PORTS", span)
    monkeypatch.setattr(_agents, "_handed_out", set())
    held = []
    try:
        for port in list(span)[:-1]:  # all but one taken by another socket
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            s.listen()
            held.append(s)
        taken = {s.getsockname()[1] for s in held}
        assert free_port() not in taken
        assert free_port() not in taken  # the range used up: the kernel's choice, still free
    finally:
        for s in held:
            s.close()
