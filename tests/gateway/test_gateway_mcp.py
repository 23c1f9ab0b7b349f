"""`/mcp` read by the `mcp` SDK's own client (`streamable_http_client`, `ClientSession`, and
`Client` at 2026-07-28): each agent a tool, a call's reply as progress notifications on the
call's own stream, the answer as its result, an agent's error as `isError`, a cancel that stops
the agent's reply, API keys and per-key limits, and hostile requests answered with MCP's own
errors."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from gateway_harness import Gateway, assert_echo_stopped, echo_produced
from inprocess_gateway import address_of, serve_gateway
from mcp import ClientSession
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from agent_stream.message import error, text
from agent_stream.writer import StreamWriter, collect

pytestmark = pytest.mark.integration

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@contextlib.asynccontextmanager
async def mcp_session(url: str, key: str | None = None) -> AsyncIterator[ClientSession]:
    """An initialized ClientSession on ``url``/mcp (Bearer ``key`` when given)."""
    headers = {"authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url + "/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def _steps(w: StreamWriter) -> None:
    async with w.block("agent", label="Researcher") as b:
        await b.text("Found three papers.")
    async with w.block("llm") as b:
        async with b.tool("search", {"q": "agents"}) as t:
            t.result({"hits": 3})
        async with b.message("text") as m:
            await m.append("Agents ")
            await m.append("stream.")


async def _fails(w: StreamWriter) -> None:
    async with w.block("llm") as b:
        await b.text("Let me look")
        await b.send(error("the model is down", code="upstream"))
    w.fail("the model is down")


async def test_each_agent_is_a_tool_taking_a_question_and_a_session(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["llm", "two@x"], [text("hi")]) as (url, _),
        mcp_session(url) as s,
    ):
        tools = {t.name: t for t in (await s.list_tools()).tools}
    # a name a tool may not hold is made of the characters it may
    assert set(tools) == {"llm", "two_x"}
    llm = tools["llm"]
    assert address_of("llm") in (llm.description or "")
    schema = llm.input_schema
    assert schema["required"] == ["question"]
    assert schema["properties"]["question"]["type"] == "string"
    assert schema["properties"]["session"]["type"] == "string"


async def test_a_call_streams_text_and_steps_as_progress_and_answers_the_text(
    tmp_path: Path,
) -> None:
    seen: list[tuple[float, str | None]] = []

    async def progress(p: float, total: float | None, message: str | None) -> None:
        seen.append((p, message))

    async with (
        serve_gateway(tmp_path, ["llm"], await collect(_steps)) as (url, link),
        mcp_session(url) as s,
    ):
        result = await s.call_tool("llm", {"question": "Find papers"}, progress_callback=progress)
    assert link.questions == [(address_of("llm"), "Find papers")]
    assert not result.is_error
    assert [c.text for c in result.content if c.type == "text"] == [
        "Found three papers.\n\nAgents stream."
    ]
    messages = [m for _, m in seen]
    assert messages == [
        "[sub-agent Researcher]",
        "Found three papers.",
        "[sub-agent Researcher completed]",
        '[tool call search] {"q": "agents"}',
        '[tool result search] {"hits": 3}',
        "Agents stream.",
    ]
    progress_values = [p for p, _ in seen]
    assert progress_values == sorted(set(progress_values)), "progress must increase"


async def test_without_a_progress_token_only_the_result_comes(tmp_path: Path) -> None:
    notes: list[Any] = []

    async def on_message(message: Any) -> None:
        notes.append(message)

    async with (
        serve_gateway(tmp_path, ["llm"], await collect(_steps)) as (url, _),
        httpx2.AsyncClient(timeout=30) as http,
        streamable_http_client(url + "/mcp", http_client=http) as (read, write),
        ClientSession(read, write, message_handler=on_message) as s,
    ):
        await s.initialize()
        result = await s.call_tool("llm", {"question": "Find papers"})
    assert result.content[0].text.endswith("Agents stream.")
    assert not [n for n in notes if "progress" in repr(n)]


async def test_an_agents_error_is_is_error_with_what_it_said(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["llm"], await collect(_fails)) as (url, _),
        mcp_session(url) as s,
    ):
        result = await s.call_tool("llm", {"question": "Anything"})
    assert result.is_error
    said = result.content[0].text
    assert "Let me look" in said and "the model is down" in said


async def test_bad_arguments_are_tool_errors_and_an_unknown_tool_invalid_params(
    tmp_path: Path,
) -> None:
    async with (
        serve_gateway(tmp_path, ["llm"], [text("hi")], max_question_bytes=100) as (url, link),
        mcp_session(url) as s,
    ):
        bad = [
            {},
            {"question": ""},
            {"question": 7},
            {"question": "hi", "extra": 1},
            {"question": "hi", "session": ""},
            {"question": "hi", "session": "s" * 201},
            {"question": "x" * 101},
        ]
        for args in bad:
            result = await s.call_tool("llm", args)
            assert result.is_error, args
        assert "limit is 100" in result.content[0].text
        with pytest.raises(MCPError) as caught:
            await s.call_tool("nobody", {"question": "hi"})
        assert caught.value.error.code == -32602
        # still serving after all of that
        assert (await s.call_tool("llm", {"question": "ok"})).content[0].text == "hi"
    assert link.questions == [(address_of("llm"), "ok")]


async def test_a_session_continues_one_conversation_per_caller(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["llm"], [text("hi")]) as (url, link),
        mcp_session(url) as s,
    ):
        for _ in range(2):
            await s.call_tool("llm", {"question": "q", "session": "trip"})
        await s.call_tool("llm", {"question": "q", "session": "other"})
        await s.call_tool("llm", {"question": "q"})
    sessions = [a["session"] for a in link.asked]
    assert sessions[0] is not None and sessions[0] == sessions[1]
    assert sessions[2] not in (None, sessions[0])
    # without one, a new conversation: a session of its own, and an empty history
    assert sessions[3] not in (None, sessions[0], sessions[2])
    assert link.asked[3]["history"] == ()
    # with a session, the agent's own memory of it is used (no history sent)
    assert link.asked[0]["history"] is None


async def test_hostile_requests_get_mcp_errors_never_a_traceback(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["llm"], [text("hi")], max_body_bytes=4096) as (url, _),
        httpx.AsyncClient(base_url=url, timeout=30, headers=ACCEPT) as http,
    ):

        async def post(body: bytes, **headers: str) -> httpx.Response:
            r = await http.post("/mcp", content=body, headers=headers)
            assert r.status_code < 500, (r.status_code, r.text)
            return r

        not_json = await post(b"{not json")
        assert not_json.json()["error"]["code"] == -32700
        deep = await post(b"[" * 2000 + b"]" * 2000)
        assert deep.json()["error"]["code"] in (-32700, -32600, -32602)
        not_rpc = await post(b'{"hello": "world"}')
        assert "error" in not_rpc.json()
        big = await post(
            b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"q": "' + b"x" * 8000 + b'"}}'
        )
        assert big.status_code == 413 and big.json()["error"]["code"] == -32600
        wrong_version = await post(
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
            **{"mcp-protocol-version": "1999-01-01"},
        )
        assert wrong_version.json()["error"]["code"] < 0
        # an initialize asking a version the server does not speak gets the server's own
        init = await post(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "1999-01-01",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "0"},
                    },
                }
            ).encode()
        )
        assert init.status_code == 200
        sid = init.headers["mcp-session-id"]
        body = init.text
        assert '"protocolVersion":"1999-01-01"' not in body.replace(" ", "")
        unknown = await post(
            b'{"jsonrpc": "2.0", "id": 2, "method": "no/such/method"}',
            **{"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"},
        )
        assert '"code":-32601' in unknown.text.replace(" ", "")


async def test_api_keys_guard_mcp_and_a_session_is_its_callers(tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, ["llm"], [text("hi")], api_keys=["ka", "kb"]) as (url, _):
        async with httpx.AsyncClient(base_url=url, timeout=30, headers=ACCEPT) as http:
            r = await http.post("/mcp", content=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
            assert r.status_code == 401
            assert r.json()["error"]["code"] == -32600 and r.json()["jsonrpc"] == "2.0"
        async with mcp_session(url, "ka") as s:
            assert (await s.call_tool("llm", {"question": "q"})).content[0].text == "hi"
        async with httpx.AsyncClient(base_url=url, timeout=30, headers=ACCEPT) as http:
            init = await http.post(
                "/mcp",
                headers={"authorization": "Bearer ka"},
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "0"},
                    },
                },
            )
            sid = init.headers["mcp-session-id"]
            other = await http.post(
                "/mcp",
                headers={
                    "authorization": "Bearer kb",
                    "mcp-session-id": sid,
                    "mcp-protocol-version": "2025-11-25",
                },
                json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            )
            # another key's session is answered as an unknown one
            assert other.status_code == 404


class _Held:
    """A reply that says one word, then holds until it is cancelled."""

    def __init__(self) -> None:
        self.status: str | None = None
        self.chat_messages = 0
        self.cancelled = asyncio.Event()

    async def __aiter__(self) -> AsyncIterator[Any]:
        yield text("Thinking")
        await self.cancelled.wait()
        self.status = "cancelled"

    def cancel(self) -> None:
        self.cancelled.set()


class _HeldLink:
    def __init__(self) -> None:
        self.replies: list[_Held] = []

    async def ask(self, address: str, question: str, **kw: Any) -> _Held:
        self.replies.append(_Held())
        return self.replies[-1]


@contextlib.asynccontextmanager
async def _held_gateway(tmp_path: Path, **config: Any) -> AsyncIterator[tuple[str, _HeldLink]]:
    async with serve_gateway(tmp_path, ["llm"], [], **config) as (url, given):
        held = _HeldLink()
        given.ask = held.ask  # type: ignore[method-assign]
        yield url, held


async def test_the_per_key_limit_holds_for_mcp_calls(tmp_path: Path) -> None:
    async with _held_gateway(tmp_path, max_replies_per_key=1) as (url, held), mcp_session(url) as s:
        first = asyncio.create_task(s.call_tool("llm", {"question": "one"}))
        deadline = time.monotonic() + 10
        while not held.replies and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        second = await s.call_tool("llm", {"question": "two"})
        assert second.is_error and "at most 1" in second.content[0].text
        held.replies[0].cancel()
        assert (await asyncio.wait_for(first, 10)).is_error  # it ended cancelled
    assert len(held.replies) == 1


async def test_cancelling_a_call_cancels_the_agents_reply(tmp_path: Path) -> None:
    async with _held_gateway(tmp_path) as (url, held), mcp_session(url) as s:
        started = asyncio.Event()

        async def progress(p: float, total: float | None, message: str | None) -> None:
            started.set()

        call = asyncio.create_task(
            s.call_tool("llm", {"question": "hold"}, progress_callback=progress)
        )
        await asyncio.wait_for(started.wait(), 10)
        call.cancel()  # the client sends notifications/cancelled for the call
        with contextlib.suppress(asyncio.CancelledError):
            await call
        await asyncio.wait_for(held.replies[0].cancelled.wait(), 10)
        # the session goes on
        assert (await s.list_tools()).tools


async def test_at_2026_07_28_closing_the_calls_stream_cancels_the_agents_reply(
    tmp_path: Path,
) -> None:
    async with _held_gateway(tmp_path) as (url, held), Client(url + "/mcp") as client:
        assert client.protocol_version == "2026-07-28"
        started = asyncio.Event()

        async def progress(p: float, total: float | None, message: str | None) -> None:
            started.set()

        call = asyncio.create_task(
            client.call_tool("llm", {"question": "hold"}, progress_callback=progress)
        )
        await asyncio.wait_for(started.wait(), 10)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        await asyncio.wait_for(held.replies[0].cancelled.wait(), 10)


# -- a real gateway in front of real agents -------------------------------------------------------
async def test_a_real_agent_answers_through_mcp_with_progress(gateway: Gateway) -> None:
    messages: list[str] = []

    async def progress(p: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    async with mcp_session(gateway.url) as s:
        names = {t.name for t in (await s.list_tools()).tools}
        assert {"llm", "echo"} <= names
        result = await s.call_tool(
            "llm", {"question": "How do agents stream?"}, progress_callback=progress
        )
    assert not result.is_error
    answer = result.content[0].text
    assert "Streaming agent output" in answer
    assert "".join(m for m in messages if not m.startswith("[")) == answer


async def test_the_2026_client_reaches_a_real_agent(gateway: Gateway) -> None:
    async with Client(gateway.url + "/mcp") as client:
        result = await client.call_tool("echo", {"question": "modern hello"})
    assert not result.is_error and "modern hello" in result.content[0].text


async def test_a_cancel_stops_a_real_agents_reply(
    gateway: Gateway, gw_agents: dict[str, Any]
) -> None:
    proc = gw_agents["echo"][0]
    async with mcp_session(gateway.url) as s:
        started = asyncio.Event()

        async def progress(p: float, total: float | None, message: str | None) -> None:
            started.set()

        call = asyncio.create_task(
            s.call_tool(
                "echo", {"question": "[n=2000 rate=50] mcpcancel"}, progress_callback=progress
            )
        )
        await asyncio.wait_for(started.wait(), 20)
        deadline = time.monotonic() + 20
        while echo_produced(proc, "mcpcancel") < 10 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        stopped_at = time.monotonic()
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
    await asyncio.to_thread(assert_echo_stopped, proc, "mcpcancel", stopped_at, within=3.0)


async def test_a_page_of_another_site_is_refused_and_loopback_and_cors_origins_are_not(
    tmp_path: Path,
) -> None:
    ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    async with (
        serve_gateway(
            tmp_path, ["llm"], [text("hi")], cors_origins=["https://app.example.com"]
        ) as (url, _),
        httpx.AsyncClient(base_url=url, timeout=30, headers=ACCEPT) as http,
    ):
        # a site whose name resolves to 127.0.0.1 (DNS rebinding) sends its own Origin
        evil = await http.post("/mcp", content=ping, headers={"origin": "http://evil.example"})
        assert evil.status_code == 403 and evil.json()["error"]["code"] == -32600
        for origin in ("https://app.example.com", "http://127.0.0.1:5173", "http://localhost"):
            r = await http.post("/mcp", content=ping, headers={"origin": origin})
            assert r.status_code != 403, origin


def _initialize(key: str) -> dict[str, Any]:
    return {
        "headers": {"authorization": f"Bearer {key}"},
        "json": {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
    }


async def test_a_caller_may_hold_max_tasks_per_key_sessions_and_no_more(tmp_path: Path) -> None:
    async with (
        serve_gateway(
            tmp_path, ["llm"], [text("hi")], api_keys=["ka", "kb"], max_tasks_per_key=2
        ) as (url, _),
        httpx.AsyncClient(base_url=url, timeout=30, headers=ACCEPT) as http,
    ):
        opened = [await http.post("/mcp", **_initialize("ka")) for _ in range(2)]
        assert all(r.status_code == 200 for r in opened)
        third = await http.post("/mcp", **_initialize("ka"))
        assert third.status_code == 429 and third.json()["error"]["code"] == -32600
        assert "at most 2 MCP sessions" in third.json()["error"]["message"]
        # another key's sessions are its own
        assert (await http.post("/mcp", **_initialize("kb"))).status_code == 200
        # another key deleting ka's session is told it does not exist, and frees nothing
        sid = opened[0].headers["mcp-session-id"]
        bad = await http.delete(
            "/mcp", headers={"authorization": "Bearer kb", "mcp-session-id": sid}
        )
        assert bad.status_code == 404
        assert (await http.post("/mcp", **_initialize("ka"))).status_code == 429
        gone = await http.delete(
            "/mcp",
            headers={
                "authorization": "Bearer ka",
                "mcp-session-id": sid,
                "mcp-protocol-version": "2025-11-25",
            },
        )
        assert gone.status_code == 200
        assert (await http.post("/mcp", **_initialize("ka"))).status_code == 200
