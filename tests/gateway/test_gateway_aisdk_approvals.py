"""AI SDK approvals at ``POST /api/chat``, over the gateway's own app on 127.0.0.1: a reply that
pauses for a tool's approval asks it with ``tool-approval-request`` (ai 6), and the follow-up
``useChat`` sends (the assistant message, its tool part ``approval-responded``) asks the answer
in the paused reply's session and continues its message: ``tool-output-available`` when
approved, ``tool-output-denied`` when refused. An ai 5 client (``x-ai-sdk-version: 5``) gets the
pause as a data part. An approval that is unknown, answered, or another caller's resumes
nothing, with a clear error."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from inprocess_gateway import serve_gateway

from agent_stream.message import Message, event, text, tool_call, tool_result
from agent_stream.sources.approvals import asking

CALL = "call_del"
ASK = asking(CALL, "delete_file", {"path": "a"})
ASKS = [
    event("stream_start", {"request_id": "q"}),
    event("block_start", {"block_id": "B1", "type": "llm", "model": "m-1"}, block_id="B1"),
    tool_call(CALL, "delete_file", '{"path": "a"}', message_id="M1", block_id="B1"),
    event("block_end", {"block_id": "B1", "status": "completed"}, block_id="B1"),
    Message(type=ASK.type, props=ASK.props, message_id="M2"),
    event("stream_end", {"status": "completed"}),
]


def resumed(output: str) -> list[Message]:
    return [
        event("stream_start", {"request_id": "q2"}),
        tool_result(CALL, "delete_file", output, message_id="M1"),
        text("Done.", message_id="M2"),
        event("stream_end", {"status": "completed"}),
    ]


USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "delete a"}]}


def chunks_of(body: str) -> list[Any]:
    out = []
    for line in body.splitlines():
        if line.startswith("data: "):
            data = line[6:]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def answered(
    asked: list[Any], approved: bool, reason: str | None = None, **change: Any
) -> dict[str, Any]:
    """The follow-up ``useChat`` sends once the user decided: the assistant message as the
    client built it from the chunks, its tool part answered."""
    req = next(c for c in asked if isinstance(c, dict) and c["type"] == "tool-approval-request")
    approval: dict[str, Any] = {"id": req["approvalId"], "approved": approved}
    if reason is not None:
        approval["reason"] = reason
    part = {
        "type": "dynamic-tool",
        "toolName": "delete_file",
        "toolCallId": req["toolCallId"],
        "state": "approval-responded",
        "input": {"path": "a"},
        "providerExecuted": True,
        "approval": approval,
        **change,
    }
    mid = asked[0]["messageId"]
    return {
        "id": "chat-1",
        "trigger": "submit-message",
        "messageId": mid,
        "messages": [
            USER,
            {"id": mid, "role": "assistant", "parts": [{"type": "step-start"}, part]},
        ],
    }


async def post(http: httpx.AsyncClient, url: str, body: dict[str, Any], **kw: Any) -> Any:
    return await http.post(f"{url}/api/chat", json=body, **kw)


async def ask(http: httpx.AsyncClient, url: str, **kw: Any) -> list[Any]:
    r = await post(http, url, {"id": "chat-1", "messages": [USER]}, **kw)
    assert r.status_code == 200, r.text
    return chunks_of(r.text)


@pytest.mark.parametrize(
    ("approved", "reason", "said"),
    [(True, None, "yes"), (False, None, "no"), (False, "keep it", "keep it")],
)
async def test_the_users_decision_resumes_the_paused_reply_in_its_message(
    tmp_path: Path, approved: bool, reason: str | None, said: str
) -> None:
    async with (
        serve_gateway(tmp_path, ["ops"], ASKS) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        asked = await ask(http, url)
        kinds = [c["type"] for c in asked if isinstance(c, dict)]
        assert kinds.index("tool-approval-request") > kinds.index("tool-input-available")
        assert "data-user_input" not in kinds
        assert {"type": "message-metadata", "messageMetadata": {"model": "m-1"}} in asked
        link.messages = resumed("deleted a" if approved else "The user refused")
        r = await post(http, url, answered(asked, approved, reason))
        assert r.status_code == 200, r.text
        got = chunks_of(r.text)
    # the answer was asked in the paused reply's session, and the reply goes on in its message
    assert link.questions[-1][1] == said
    assert link.asked[1]["session"] == link.asked[0]["session"] is not None
    assert got[0] == {"type": "start", "messageId": asked[0]["messageId"]}
    if approved:
        assert got[1]["type"] == "tool-output-available" and got[1]["output"] == "deleted a"
    else:
        assert got[1] == {"type": "tool-output-denied", "toolCallId": CALL}
    assert got[1]["toolCallId"] == CALL and got[-2]["type"] == "finish"


async def test_an_ai5_client_gets_the_pause_as_a_data_part(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["ops"], ASKS) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        asked = await ask(http, url, headers={"x-ai-sdk-version": "5.0.277"})
        kinds = [c["type"] for c in asked if isinstance(c, dict)]
        assert "tool-approval-request" not in kinds and "data-user_input" in kinds
        r = await post(http, url, {"messages": [USER]}, headers={"x-ai-sdk-version": "four"})
        assert r.status_code == 400 and r.json()["code"] == "invalid_ai_sdk_version"
    assert len(link.questions) == 1


async def test_an_approval_resumes_once_and_only_for_its_caller(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = {"k1": {"authorization": "Bearer k1"}, "k2": {"authorization": "Bearer k2"}}
    async with (
        serve_gateway(tmp_path, ["ops"], ASKS, api_keys=list(keys)) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        asked = await ask(http, url, headers=keys["k1"])
        follow_up = answered(asked, True)
        # another caller's approval: as unknown to them as one never asked
        r = await post(http, url, follow_up, headers=keys["k2"])
        assert r.status_code == 404 and r.json()["code"] == "unknown_approval"
        unknown = answered(asked, True, approval={"id": "msg-nope.M2", "approved": True})
        r = await post(http, url, unknown, headers=keys["k1"])
        assert r.status_code == 404 and "msg-nope.M2" in r.json()["errorText"]
        other_call = answered(asked, True, toolCallId="call_other")
        r = await post(http, url, other_call, headers=keys["k1"])
        assert r.status_code == 400 and "call_other" in r.json()["errorText"]
        for bad in ({"id": 3, "approved": True}, {"id": "x", "approved": "yes"}, "approve"):
            r = await post(http, url, answered(asked, True, approval=bad), headers=keys["k1"])
            assert r.status_code == 400, r.text
            assert r.json()["code"] == "invalid_approval"
        assert len(link.questions) == 1  # nothing was asked
        link.messages = resumed("deleted a")
        r = await post(http, url, follow_up, headers=keys["k1"])
        assert r.status_code == 200 and "tool-output-available" in r.text
        # answered: a second answer resumes nothing
        r = await post(http, url, follow_up, headers=keys["k1"])
        assert r.status_code == 404 and r.json()["code"] == "unknown_approval"
        assert "Traceback" not in r.text
    assert [q for _, q in link.questions] == ["delete a", "yes"]
    assert not [x for x in caplog.records if x.levelno >= logging.ERROR]


async def test_a_pause_with_two_approvals_takes_both_answers(tmp_path: Path) -> None:
    second = asking("call_two", "delete_file", {"path": "b"})
    two = [
        *ASKS[:3],
        tool_call("call_two", "delete_file", '{"path": "b"}', message_id="M3", block_id="B1"),
        *ASKS[3:5],
        Message(type=second.type, props=second.props, message_id="M4"),
        ASKS[-1],
    ]
    async with (
        serve_gateway(tmp_path, ["ops"], two) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        asked = await ask(http, url)
        reqs = [c for c in asked if isinstance(c, dict) and c["type"] == "tool-approval-request"]
        assert [r["toolCallId"] for r in reqs] == [CALL, "call_two"]
        only_one = answered(asked, True)
        r = await post(http, url, only_one)
        assert r.status_code == 400 and r.json()["code"] == "unanswered_approval"
        parts = only_one["messages"][1]["parts"]
        parts.append(
            {
                **parts[1],
                "toolCallId": "call_two",
                "approval": {"id": reqs[1]["approvalId"], "approved": False},
            }
        )
        link.messages = [
            event("stream_start", {}),
            text("Nothing deleted.", message_id="M1"),
            event("stream_end", {"status": "completed"}),
        ]
        r = await post(http, url, only_one)
        assert r.status_code == 200, r.text
        got = chunks_of(r.text)
    # one answer per pause: a refusal among the decisions refuses both calls
    assert link.questions[-1][1] == "no"
    denied = [c["toolCallId"] for c in got if isinstance(c, dict) and c["type"].endswith("denied")]
    assert denied == [CALL, "call_two"]


async def test_an_answer_that_cannot_be_asked_keeps_the_approval_open(tmp_path: Path) -> None:
    from agent_stream.uagents import DeliveryError

    async with (
        serve_gateway(tmp_path, ["ops"], ASKS) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        asked = await ask(http, url)
        follow_up = answered(asked, True)
        link.messages = resumed("deleted a")
        deliver = link.ask

        async def unreachable(*a: Any, **kw: Any) -> Any:
            raise DeliveryError("the agent is unreachable")

        link.ask = unreachable  # type: ignore[method-assign]
        r = await post(http, url, follow_up)
        assert r.status_code == 502 and r.json()["code"] == "agent_unreachable"
        link.ask = deliver  # type: ignore[method-assign]
        r = await post(http, url, follow_up)
        assert r.status_code == 200 and "tool-output-available" in r.text
    assert [q for _, q in link.questions] == ["delete a", "yes"]


async def test_a_chat_asks_in_one_session_per_caller(tmp_path: Path) -> None:
    keys = {"k1": {"authorization": "Bearer k1"}, "k2": {"authorization": "Bearer k2"}}
    async with (
        serve_gateway(tmp_path, ["ops"], resumed("x"), api_keys=list(keys)) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        for chat, key in (("c1", "k1"), ("c1", "k1"), ("c2", "k1"), ("c1", "k2"), (None, "k1")):
            body: dict[str, Any] = {"messages": [USER]}
            if chat is not None:
                body["id"] = chat
            r = await post(http, url, body, headers=keys[key])
            assert r.status_code == 200, r.text
    sessions = [a["session"] for a in link.asked]
    # the same chat of the same caller: one session, so a typed answer reaches a paused run
    assert sessions[0] == sessions[1]
    # another chat, another caller's chat of the same id, no chat id: sessions of their own
    assert len({sessions[0], *sessions[2:]}) == 4


async def test_an_answer_sent_as_the_reply_ends_finds_its_pause() -> None:
    """A client answers as soon as it has read the end, maybe before the gateway has kept the
    reply's approvals (a slow store): ``settle`` waits for the caller's ending replies."""
    import asyncio
    import uuid

    from agent_stream.gateway.chat_approvals import ChatApprovals, Decision, Paused
    from agent_stream.gateway.link import AgentRef
    from agent_stream.gateway.runs import Run
    from agent_stream.gateway.store import MemoryStore, end_entry

    class SlowStore(MemoryStore):
        async def read(self, reply_id: str, start: int = 0, *, idle: Any = None) -> Any:
            await asyncio.sleep(0.3)
            async for e in super().read(reply_id, start, idle=idle):
                yield e

    store = SlowStore()
    await store.create("r1", {})
    await store.append("r1", [m.to_json() for m in ASKS] + [end_entry("completed", None)])
    run = Run("r1", AgentRef("ops", "agent1qops"), "k1", "delete a")
    run.task = asyncio.create_task(asyncio.sleep(0))
    await run.task
    run.status = "completed"
    approvals = ChatApprovals()
    approvals.watch(
        store, run, {"message_id": "msg-r1"}, Paused("k1", "ops", uuid.uuid4(), "msg-r1", {})
    )
    answer = [Decision("msg-r1.M2", CALL, True)]
    await approvals.settle("k2")  # another caller's ending replies: nothing to wait for
    assert approvals.waiting.get(("k1", "msg-r1.M2")) is None  # not kept yet
    await approvals.settle("k1")
    paused = approvals.take("k1", answer)
    assert paused.calls == {"msg-r1.M2": CALL} and paused.message_id == "msg-r1"
