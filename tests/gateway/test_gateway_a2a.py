"""`POST /a2a/{agent}` read by a2a-sdk's own client, at A2A 1.0 and at 0.3 on the same URL: the
agent card (its 1.0 and 0.3 interfaces, the 0.3 fields beside them), SendStreamingMessage /
message/stream, and CancelTask / tasks/cancel of a running task (the task ends canceled at
once); the card at the domain root, where a client looks first; messages with no parts, no
text, or parts an agent cannot take, refused as invalid params; a wrong A2A-Version, an unknown
method, a malformed request: the protocol's own errors."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from a2a.types import CancelTaskRequest, Message, Role, SendMessageRequest, TaskState
from a2a_sdk import Built, ask, card_of, client_for, collect, texts
from gateway_harness import Gateway, Harness, assert_echo_stopped, start_gateway
from inprocess_gateway import address_of, serve_gateway

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_card_and_message_stream(gateway: Gateway, version: str) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await card_of(http, f"{gateway.url}/a2a/llm")
        assert card.name == "llm" and card.capabilities.streaming
        url = f"{gateway.url}/a2a/llm"
        assert [
            (i.url, i.protocol_binding, i.protocol_version) for i in card.supported_interfaces
        ] == [
            (url, "JSONRPC", "1.0"),
            (url, "JSONRPC", "0.3"),
        ]
        client = client_for(card, http, version)
        built = await collect(client.send_message(ask("How do agents stream?")))
    task = await built.task()
    assert task is not None and task.status.state == TaskState.TASK_STATE_COMPLETED
    assert TaskState.TASK_STATE_WORKING in built.states
    said = texts(task)
    assert said and "Streaming agent output" in said[-1]


async def test_the_card_keeps_the_0_3_fields_beside_its_interfaces(gateway: Gateway) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        raw = (await http.get(f"{gateway.url}/a2a/llm/.well-known/agent-card.json")).json()
    url = f"{gateway.url}/a2a/llm"
    assert raw["supportedInterfaces"] == [
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
    ]
    # what a 0.3 client reads: the URL, its transport and version at the top
    assert raw["url"] == url and raw["preferredTransport"] == "JSONRPC"
    assert raw["protocolVersion"] == "0.3" and raw["capabilities"]["streaming"] is True


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_tasks_cancel_stops_a_running_task(
    gateway: Gateway, gw_agents: dict[str, Any], version: str
) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await card_of(http, f"{gateway.url}/a2a/echo")
        client = client_for(card, http, version)
        built = Built()
        cancel_at: float | None = None
        cancelled: Any = None

        async def read() -> None:
            nonlocal cancel_at, cancelled
            async for item in client.send_message(ask("[n=1000 rate=50] cancel me")):
                await built.add(item)
                if cancel_at is None and item.HasField("artifact_update"):
                    cancel_at = time.monotonic()
                    tid = item.artifact_update.task_id
                    cancelled = await client.cancel_task(CancelTaskRequest(id=tid))

        await asyncio.wait_for(read(), 20)
        ended = time.monotonic()
    task = await built.task()
    assert cancel_at is not None and ended - cancel_at < 2.0 + 3.0  # generous under load
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert task is not None and task.status.state == TaskState.TASK_STATE_CANCELED
    assert "w1000" not in "".join(texts(task))
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


SENDS = ("message/send", "message/stream", "SendMessage", "SendStreamingMessage")


def _version(method: str) -> dict[str, str]:
    """The A2A-Version header a client of ``method``'s protocol version sends."""
    return {"A2A-Version": "0.3" if "/" in method else "1.0"}


def _parts(method: str, parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """0.3 parts (with ``kind``) as the method's version writes them."""
    if "/" in method:
        return parts
    out = []
    for p in parts:
        q = {k: v for k, v in p.items() if k not in ("kind", "file")}
        if p.get("kind") == "file":
            f = p["file"]
            q = {"url": f["uri"]} if "uri" in f else {"raw": f["bytes"]}
        out.append(q)
    return out


def _rpc(method: str, parts: list[dict[str, Any]], rid: Any = 7) -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": str(uuid4()), "parts": _parts(method, parts)}
    message.update({"role": "user", "kind": "message"} if "/" in method else {"role": "ROLE_USER"})
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"message": message}}


async def test_the_root_card_is_the_one_agents_and_a_client_finds_it_unmodified(
    tmp_path: Path,
) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], _reply("Hello from solo.")) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        # the resolver's default path: /.well-known/agent-card.json at the domain root
        card = await card_of(http, url)
        assert card.name == "solo"
        assert card.supported_interfaces[0].url == f"{url}/a2a/solo"
        old = (await http.get(f"{url}/.well-known/agent.json")).json()
        assert old["name"] == "solo" and old["url"] == f"{url}/a2a/solo"
        built = await collect(client_for(card, http).send_message(ask("hi")))
    task = await built.task()
    assert task is not None and task.status.state == TaskState.TASK_STATE_COMPLETED
    assert texts(task) == ["Hello from solo."]
    assert link.questions == [(address_of("solo"), "hi")]


async def test_the_root_card_is_the_default_agents(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["a", "b"], _reply("x"), default_agent="b") as (url, _),
        httpx.AsyncClient(timeout=30) as http,
    ):
        card = await card_of(http, url)
    assert card.name == "b" and card.supported_interfaces[0].url == f"{url}/a2a/b"


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
    from a2a.utils.errors import InvalidParamsError

    async with (
        serve_gateway(tmp_path, ["solo"], _reply("an answer")) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
        httpx.AsyncClient(timeout=30) as sdk_http,
    ):
        for method in SENDS:
            r = await http.post(f"{url}/a2a/solo", json=_rpc(method, []), headers=_version(method))
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["id"] == 7 and "result" not in body
            assert body["error"]["code"] == -32602 and "no parts" in body["error"]["message"]
        # a2a-sdk's own client sees the JSON-RPC error
        card = await card_of(sdk_http, f"{url}/a2a/solo")
        client = client_for(card, sdk_http, streaming=False)
        empty = SendMessageRequest(
            message=Message(role=Role.ROLE_USER, message_id=str(uuid4()), parts=[])
        )
        with pytest.raises(InvalidParamsError):
            async for _ in client.send_message(empty):
                pass
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
        for method in SENDS:
            r = await http.post(
                f"{url}/a2a/solo", json=_rpc(method, parts, rid="x1"), headers=_version(method)
            )
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
            f"{url}/a2a/solo",
            json={
                "jsonrpc": "2.0",
                "id": 2,
                "method": "SendMessage",
                "params": {"message": {"parts": {"text": "x"}}},
            },
            headers={"A2A-Version": "1.0"},
        )
        assert r.json()["error"]["code"] == -32602 and r.json()["id"] == 2
        r = await http.post(
            f"{url}/a2a/solo", json={"jsonrpc": "2.0", "id": 3, "method": "tasks/teleport"}
        )
        assert r.json()["error"]["code"] == -32601 and r.json()["id"] == 3
        r = await http.post(f"{url}/a2a/solo", json={"jsonrpc": "2.0", "method": 5, "id": 4})
        assert r.json()["error"]["code"] == -32600
        r = await http.post(
            f"{url}/a2a/solo", json=_rpc("message/send", [{"kind": "text", "text": "fine"}])
        )
        assert r.json()["result"]["status"]["state"] == "completed"
        r = await http.post(
            f"{url}/a2a/solo",
            json=_rpc("SendMessage", [{"kind": "text", "text": "fine too"}]),
            headers={"A2A-Version": "1.0"},
        )
        assert r.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert link.questions == [(address_of("solo"), "fine"), (address_of("solo"), "fine too")]


async def test_a_wrong_a2a_version_is_the_protocols_error_nothing_asked(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], _reply("x")) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        # a 1.0 method from a client that names no version (so 0.3) or another major version
        for header in ({}, {"A2A-Version": "2.0"}, {"A2A-Version": "0.3"}):
            for method in ("SendMessage", "SendStreamingMessage"):
                body = _rpc(method, [{"kind": "text", "text": "hi"}])
                r = await http.post(f"{url}/a2a/solo", json=body, headers=header)
                assert r.status_code == 200 and r.json()["error"]["code"] == -32009, r.text
        # a 0.3 method sent as 1.0
        body = _rpc("message/send", [{"kind": "text", "text": "hi"}])
        r = await http.post(f"{url}/a2a/solo", json=body, headers={"A2A-Version": "1.0"})
        assert "error" in r.json() and "result" not in r.json()
    assert link.questions == []


async def test_gateway_default_agent_flag_names_the_root_card(
    gw_harness: Harness, gw_agents: dict[str, Any]
) -> None:
    gw = await asyncio.to_thread(
        start_gateway, gw_harness, "--agent", "llm", "--agent", "echo", "--default-agent", "echo"
    )
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            card = await card_of(http, gw.url)
            assert card.name == "echo" and card.supported_interfaces[0].url == f"{gw.url}/a2a/echo"
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
