"""`agent-stream gateway --max-tasks-per-key N --max-tasks N`: the A2A task caps from the command
line, a real gateway in front of the echo agent on 127.0.0.1; a bad value is one line on stderr
and exit 2, before anything starts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any
from uuid import uuid4

import httpx
import pytest
from gateway_harness import Gateway, Harness, start_gateway

pytestmark = pytest.mark.integration

SLOW = "[n=1000 rate=50]"  # 20 s of reply: its task stays working while the test runs


def _key(name: str) -> dict[str, str]:
    return {"authorization": f"Bearer {name}"}


def _send(method: str, words: str) -> dict[str, Any]:
    message = {
        "role": "user",
        "messageId": str(uuid4()),
        "kind": "message",
        "parts": [{"kind": "text", "text": words}],
    }
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}


@pytest.fixture(scope="module")
def capped(gw_harness: Harness, gw_agents: object) -> Iterator[Gateway]:
    keys = [a for k in ("k1", "k2", "k3") for a in ("--api-key", k)]
    g = start_gateway(
        gw_harness, "--agent", "echo", *keys, "--max-tasks-per-key", "1", "--max-tasks", "2"
    )
    yield g
    g.proc.stop()


def _open_task(stack: ExitStack, c: httpx.Client, key: str) -> str:
    """A task of ``key`` left working (its ``message/stream`` kept open): its id."""
    r = stack.enter_context(
        c.stream("POST", "/a2a/echo", json=_send("message/stream", f"{SLOW} q"), headers=_key(key))
    )
    for line in r.iter_lines():
        if line.startswith("data:"):
            result = json.loads(line[5:])["result"]
            tid: str = result.get("taskId") or result["id"]
            return tid
    raise AssertionError("the stream ended before its task started")


def test_the_flags_set_the_task_caps(capped: Gateway) -> None:
    with capped.client() as c, ExitStack() as stack:
        tasks = {"k1": _open_task(stack, c, "k1")}
        # the per-key cap is 1 (the default keeps 128): a second open task of k1 is refused
        r = c.post("/a2a/echo", json=_send("message/send", "again"), headers=_key("k1"))
        error = r.json()["error"]
        assert error["code"] == -32000 and "you have 1 tasks open" in error["message"], error
        # the gateway's cap is 2: k2's task fits, k3's does not
        tasks["k2"] = _open_task(stack, c, "k2")
        r = c.post("/a2a/echo", json=_send("message/send", "third"), headers=_key("k3"))
        error = r.json()["error"]
        assert error["code"] == -32000 and "the gateway has 2 tasks open" in error["message"]
        for key, tid in tasks.items():
            cancel = {"jsonrpc": "2.0", "id": 2, "method": "tasks/cancel", "params": {"id": tid}}
            r = c.post("/a2a/echo", json=cancel, headers=_key(key))
            assert r.json()["result"]["status"]["state"] == "canceled", r.text


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--max-tasks-per-key", "0", "--max-tasks-per-key must be at least 1"),
        ("--max-tasks", "-2", "--max-tasks must be at least 1"),
        ("--max-tasks", "many", "argument --max-tasks: invalid int value: 'many'"),
    ],
)
def test_a_bad_task_cap_is_refused(gw_harness: Harness, flag: str, value: str, said: str) -> None:
    p = gw_harness.cli("gateway", "--port", "1", flag, value)
    code, out, err = p.finish(30)
    assert code == 2 and said in err and "Traceback" not in err, err
    assert [x for x in err.splitlines() if not x.startswith((" ", "usage:"))] == [
        x for x in err.splitlines() if said in x
    ]
    assert "gateway:" not in out
