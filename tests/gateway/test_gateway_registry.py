"""The gateway serves every wire of the registry: ``/v1/stream?accept=NAME`` answers in each,
with the registry's content type and headers and the very bytes ``convert --to NAME`` writes
(SSE ids aside); the command line, routing by accept and the gateway offer one set."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import httpx
import pytest
from inprocess_gateway import serve_gateway

from agent_stream.adapters import registry
from agent_stream.adapters.routing import format_for
from agent_stream.cli import build_parser
from agent_stream.commands.formats import FORMATS
from agent_stream.errors import WireError
from agent_stream.message import Message, event, text, tool_call

pytestmark = pytest.mark.integration

MSGS = [
    event("stream_start", {"request_id": "r1"}),
    Message(type="thinking", message_id="T1", props={"content": "Let me look."}),
    tool_call("c1", "lookup", '{"q": "x"}', message_id="M2"),
    text("Hi ", message_id="M1"),
    Message(type="text", message_id="M1", delta=True, props={"content": "there."}),
    event("stream_end", {"status": "completed"}),
]


def _convert_choices() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in sub.choices["convert"]._actions if a.dest == "to")
    return set(action.choices or ())


def _routed(name: str) -> bool:
    try:
        return format_for(name) == name
    except WireError:
        return False


async def test_every_way_in_offers_the_same_wires_and_the_gateway_writes_convert_bytes(
    tmp_path: Path,
) -> None:
    names = registry.names()
    served: set[str] = set()
    async with (
        serve_gateway(tmp_path, ["solo"], MSGS) as (url, _),
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        for name in names:
            r = await http.get("/v1/stream", params={"q": "hi", "accept": name})
            if r.status_code != 200:
                continue
            served.add(name)
            wire = registry.wire_named(name)
            assert r.headers["content-type"].startswith(wire.content_type()), name
            for k, v in wire.headers.items():
                assert r.headers[k] == v
            body = re.sub(r"^id: r[0-9a-f]+:\d+\n", "", r.text, flags=re.M)
            encode = FORMATS[name].encoder
            assert encode is not None
            assert body == "".join(encode(iter(MSGS), None)), name
            if wire.framing == "sse":
                assert r.text.count("id: ") == r.text.count("data: "), name
        # the Accept header picks a wire by name too; an unknown one is refused
        r = await http.get("/v1/stream", params={"q": "hi"}, headers={"accept": "a2a"})
        assert '"kind":"status-update"' in r.text
        r = await http.get("/v1/stream", params={"q": "hi", "accept": "xml"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_accept"
    assert served == set(names) == _convert_choices() == {n for n in names if _routed(n)}


async def test_the_native_stream_of_a_reply_stopped_at_once_still_ends(tmp_path: Path) -> None:
    """The native stream is the cui wire's own encoder: a reply that ends before its first
    Message still gets a stream_end saying how it ended."""
    async with (
        serve_gateway(tmp_path, ["solo"], []) as (url, _),
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        r = await http.get(
            "/v1/stream", params={"q": "hi"}, headers={"accept": "application/x-ndjson"}
        )
    assert r.headers["content-type"].startswith("application/x-ndjson")
    [end] = [Message.from_json(x) for x in r.text.splitlines()]
    assert end.event == "stream_end" and (end.props or {})["data"]["status"] == "completed"
