"""`POST /a2a/{agent}` read by a2a-sdk's own client: the agent card, message/stream, and
tasks/cancel of a running task (the task ends canceled at once); the card at the domain root,
where a client looks first; messages with no parts, no text, or parts an agent cannot take,
refused as invalid params."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, TaskIdParams, TaskState, TextPart
from gateway_harness import Gateway, Harness, assert_echo_stopped, start_gateway
from inprocess_gateway import address_of, serve_gateway

pytestmark = pytest.mark.integration


def _message(text: str) -> Message:
    return Message(role=Role.user, message_id=str(uuid4()), parts=[Part(root=TextPart(text=text))])


def _texts(task: Any) -> list[str]:
    return [
        "".join(p.root.text for p in a.parts if hasattr(p.root, "text"))
        for a in task.artifacts or []
        if a.name == "text"
    ]


async def test_card_and_message_stream(gateway: Gateway) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, f"{gateway.url}/a2a/llm").get_agent_card()
        assert card.name == "llm" and card.capabilities.streaming
        assert card.url == f"{gateway.url}/a2a/llm"
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        task, states = None, []
        async for item in client.send_message(_message("How do agents stream?")):
            if isinstance(item, tuple):
                task = item[0]
                states.append(task.status.state)
    assert task is not None and task.status.state == TaskState.completed
    assert TaskState.working in states
    texts = _texts(task)
    assert texts and "Streaming agent output" in texts[-1]


async def test_tasks_cancel_stops_a_running_task(
    gateway: Gateway, gw_agents: dict[str, Any]
) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, f"{gateway.url}/a2a/echo").get_agent_card()
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        seen: list[TaskState] = []
        cancel_at: float | None = None
        cancelled: Any = None

        async def read() -> Any:
            nonlocal cancel_at, cancelled
            last = None
            async for item in client.send_message(_message("[n=1000 rate=50] cancel me")):
                if not isinstance(item, tuple):
                    continue
                last = item[0]
                seen.append(last.status.state)
                if cancel_at is None and last.artifacts:
                    cancel_at = time.monotonic()
                    cancelled = await client.cancel_task(TaskIdParams(id=last.id))
            return last

        task = await asyncio.wait_for(read(), 20)
        ended = time.monotonic()
    assert cancel_at is not None and ended - cancel_at < 2.0
    assert cancelled.status.state == TaskState.canceled
    assert task.status.state == TaskState.canceled
    assert "w1000" not in "".join(_texts(task))
    # the cancel reached the agent: it stopped producing too
    echo = gw_agents["echo"][0]
    await asyncio.to_thread(assert_echo_stopped, echo, "cancel", cancel_at)


# -- the card at the domain root, and what a message may carry -----------------------------------
def _reply(text: str) -> list[Any]:
    from agent_stream.message import event
    from agent_stream.message import text as text_msg

    return [
        event("stream_start", {"request_id": "q"}),
        text_msg(text, message_id="M1"),
        event("stream_end", {"status": "completed"}),
    ]


def _rpc(method: str, parts: list[dict[str, Any]], rid: Any = 7) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": method,
        "params": {
            "message": {
                "role": "user",
                "messageId": str(uuid4()),
                "kind": "message",
                "parts": parts,
            }
        },
    }


async def test_the_root_card_is_the_one_agents_and_a_client_finds_it_unmodified(
    tmp_path: Path,
) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], _reply("Hello from solo.")) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        # the resolver's default path: /.well-known/agent-card.json at the domain root
        card = await A2ACardResolver(http, url).get_agent_card()
        assert card.name == "solo" and card.url == f"{url}/a2a/solo"
        old = (await http.get(f"{url}/.well-known/agent.json")).json()
        assert old["name"] == "solo"
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        task = None
        async for item in client.send_message(_message("hi")):
            if isinstance(item, tuple):
                task = item[0]
    assert task is not None and task.status.state == TaskState.completed
    assert _texts(task) == ["Hello from solo."]
    assert link.questions == [(address_of("solo"), "hi")]


async def test_the_root_card_is_the_default_agents(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["a", "b"], _reply("x"), default_agent="b") as (url, _),
        httpx.AsyncClient(timeout=30) as http,
    ):
        card = await A2ACardResolver(http, url).get_agent_card()
    assert card.name == "b" and card.url == f"{url}/a2a/b"


async def test_the_root_card_of_several_agents_is_a_404_naming_each_card(gateway: Gateway) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        r = await http.get(f"{gateway.url}/.well-known/agent-card.json")
        assert r.status_code == 404 and r.headers["content-type"] == "application/json"
        err = r.json()["error"]
        assert err["code"] == "ambiguous_agent"
        for name in ("llm", "echo"):
            path = f"/a2a/{name}/.well-known/agent-card.json"
            assert path in err["cards"] and path in err["message"]
            assert (await http.get(gateway.url + path)).json()["name"] == name


async def test_a_message_without_parts_is_invalid_params_not_an_empty_question(
    tmp_path: Path,
) -> None:
    from a2a.client.errors import A2AClientJSONRPCError

    async with (
        serve_gateway(tmp_path, ["solo"], _reply("an answer")) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        for method in ("message/send", "message/stream"):
            r = await http.post(f"{url}/a2a/solo", json=_rpc(method, []))
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["id"] == 7 and "result" not in body
            assert body["error"]["code"] == -32602 and "no parts" in body["error"]["message"]
        # a2a-sdk's own client sees the JSON-RPC error
        card = await A2ACardResolver(http, f"{url}/a2a/solo").get_agent_card()
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        empty = Message(role=Role.user, message_id=str(uuid4()), parts=[])
        with pytest.raises(A2AClientJSONRPCError) as info:
            async for _ in client.send_message(empty):
                pass
        assert info.value.error.code == -32602
    assert link.questions == []  # nothing was asked


@pytest.mark.parametrize(
    ("parts", "named"),
    [
        (
            [
                {
                    "kind": "file",
                    "file": {"uri": "https://example.com/a.pdf", "mimeType": "application/pdf"},
                }
            ],
            ["parts[0] (file)"],
        ),
        (
            [{"kind": "text", "text": "see the data"}, {"kind": "data", "data": {"rows": [1, 2]}}],
            ["parts[1] (data)"],
        ),
        (
            [
                {"kind": "data", "data": {}},
                {"kind": "text", "text": "and"},
                {"kind": "file", "file": {"bytes": "aGk=", "name": "hi.txt"}},
            ],
            ["parts[0] (data)", "parts[2] (file)"],
        ),
        ([{"kind": "text", "text": "  "}], []),
    ],
)
async def test_parts_the_agent_cannot_take_are_refused_by_name(
    tmp_path: Path, parts: list[dict[str, Any]], named: list[str]
) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], _reply("an answer")) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        for method in ("message/send", "message/stream"):
            r = await http.post(f"{url}/a2a/solo", json=_rpc(method, parts, rid="x1"))
            err = r.json()["error"]
            assert err["code"] == -32602 and r.json()["id"] == "x1"
            for n in named:
                assert n in err["message"]
            assert err.get("data", {}).get("refused_parts", []) == named
    assert link.questions == []


async def test_a_malformed_request_is_still_the_sdks_to_answer(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], _reply("x")) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        r = await http.post(f"{url}/a2a/solo", content=b"{not json")
        assert r.json()["error"]["code"] == -32700
        r = await http.post(
            f"{url}/a2a/solo",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {"message": {"parts": "x"}},
            },
        )
        assert r.json()["error"]["code"] == -32602
        r = await http.post(
            f"{url}/a2a/solo", json=_rpc("message/send", [{"kind": "text", "text": "fine"}])
        )
        assert r.json()["result"]["status"]["state"] == "completed"
    assert link.questions == [(address_of("solo"), "fine")]


async def test_gateway_default_agent_flag_names_the_root_card(
    gw_harness: Harness, gw_agents: dict[str, Any]
) -> None:
    gw = await asyncio.to_thread(
        start_gateway, gw_harness, "--agent", "llm", "--agent", "echo", "--default-agent", "echo"
    )
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            card = await A2ACardResolver(http, gw.url).get_agent_card()
            assert card.name == "echo" and card.url == f"{gw.url}/a2a/echo"
            # a request naming no agent gets the default one too
            r = await http.get(f"{gw.url}/v1/stream", params={"q": "who"})
            assert r.status_code == 200 and r.headers["x-reply-id"]
        assert "agent=echo" in await asyncio.to_thread(_access_line, gw, r.headers["x-reply-id"])
    finally:
        gw.proc.stop()


def _access_line(gw: Gateway, rid: str) -> str:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        lines = [x for x in gw.proc.stderr.splitlines() if f"reply={rid}" in x]
        if lines:
            return lines[0]
        time.sleep(0.05)
    return ""


async def test_with_api_keys_the_root_card_stays_public_and_asking_does_not(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], _reply("x"), api_keys=["k1"]) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        assert (await http.get(f"{url}/.well-known/agent-card.json")).json()["name"] == "solo"
        r = await http.post(f"{url}/a2a/solo", json=_rpc("message/send", []))
        assert r.status_code == 401 and r.json()["error"]["code"] == -32001
        r = await http.post(
            f"{url}/a2a/solo", json=_rpc("message/send", []), headers={"authorization": "Bearer k1"}
        )
        assert r.json()["error"]["code"] == -32602
    assert link.questions == []
