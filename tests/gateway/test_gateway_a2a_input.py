"""Human in the loop over A2A: a LangGraph ``interrupt`` served by a real agent ends its task
``input-required`` at the gateway's A2A endpoint, the interrupt's value as the question; a
follow-up on the same ``taskId`` resumes the graph and continues the same task to
``completed``, read by a2a-sdk's own client (message/stream and message/send) and tasks/get.
Every other ``taskId`` (unknown, finished, working, answered already, another caller's, in
another context) is refused with the JSON-RPC error a2a-sdk uses, nothing asked."""

from __future__ import annotations

import asyncio
import json
import logging
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from a2a.types import GetTaskRequest, Role, SendMessageRequest, TaskState
from a2a_sdk import ask, card_of, client_for, collect, texts
from gateway_harness import Harness, start_gateway
from google.protobuf.json_format import MessageToDict
from inprocess_gateway import GivenReplies, serve_gateway

from agent_stream.message import Message, event, text, user_input

pytest.importorskip("langgraph")
pytestmark = pytest.mark.integration

GRAPH = """
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import interrupt


async def draft(state: MessagesState) -> dict[str, Any]:
    model = GenericFakeChatModel(messages=iter(["I drafted the email to Bob."]))
    return {"messages": [await model.ainvoke(state["messages"])]}


async def approve(state: MessagesState) -> dict[str, Any]:
    answer = interrupt({"question": "Send the email to Bob?", "options": ["yes", "no"]})
    return {"messages": [AIMessage(content=f"Sent: you said {answer}.")]}


g = StateGraph(MessagesState)
g.add_node("draft", draft)
g.add_node("approve", approve)
g.add_edge(START, "draft")
g.add_edge("draft", "approve")
graph = g.compile(checkpointer=InMemorySaver())
"""


def _said(message: Any) -> str:
    return "".join(p.text for p in message.parts if p.HasField("text"))


async def _send(client: Any, request: SendMessageRequest) -> tuple[Any, list[Any]]:
    """The task a client ends up with, and every event's task id and state."""
    built = await collect(client.send_message(request))
    task = await built.task()
    assert task is not None and built.message is None
    seen = []
    for ev in built.events:
        which = ev.WhichOneof("payload")
        item = getattr(ev, which)
        if which == "task":
            seen.append((item.id, item.status.state))
        elif which == "status_update":
            seen.append((item.task_id, item.status.state))
    return task, seen


@pytest.fixture(scope="module")
def hitl_gateway(gw_harness: Harness, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """`serve --app hitl_graph.py:graph --name hitl` and a gateway in front of it."""
    app = tmp_path_factory.mktemp("hitl") / "hitl_graph.py"
    app.write_text(textwrap.dedent(GRAPH), encoding="utf-8")
    server, _, _ = gw_harness.serve("--app", f"{app}:graph", "--name", "hitl")
    gw = start_gateway(gw_harness, "--agent", "hitl")
    try:
        yield gw
    finally:
        gw.proc.stop()
        server.stop()


@pytest.mark.parametrize(
    ("streaming", "version"),
    [(True, "1.0"), (False, "1.0"), (True, "0.3"), (False, "0.3")],
    ids=["stream-1.0", "send-1.0", "stream-0.3", "send-0.3"],
)
async def test_an_interrupt_asks_and_the_answer_on_the_same_task_resumes_it(
    hitl_gateway: Any, streaming: bool, version: str
) -> None:
    async with httpx.AsyncClient(timeout=60) as http:
        card = await card_of(http, f"{hitl_gateway.url}/a2a/hitl")
        client = client_for(card, http, version, streaming=streaming)
        asked, _ = await _send(client, ask("Email Bob that the demo moved to Friday."))
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        question = asked.status.message
        assert "Send the email to Bob?" in _said(question)
        [data, card] = [MessageToDict(p) for p in question.parts if p.HasField("data")]
        assert data["data"]["value"] == {
            "question": "Send the email to Bob?",
            "options": ["yes", "no"],
        }
        # the agent asks it as a form card: the card is a data part of its own
        assert card["metadata"] == {"agent_stream": {"type": "card"}}
        assert card["data"]["kind"] == "form" and card["data"] == data["data"]["card"]
        assert texts(asked) == ["I drafted the email to Bob."]

        done, seen = await _send(client, ask("yes", asked.id, asked.context_id))
        assert done.id == asked.id and done.context_id == asked.context_id
        assert {tid for tid, _ in seen} == {asked.id}
        if streaming:
            states = [s for _, s in seen]
            assert states[0] == TaskState.TASK_STATE_WORKING
            assert TaskState.TASK_STATE_SUBMITTED not in states
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        # the same task: the draft it had, then the resumed run's answer
        if streaming:  # the stream carried only the new artifacts
            assert texts(done)[-1] == "Sent: you said yes."
        else:  # the task whole
            assert texts(done) == ["I drafted the email to Bob.", "Sent: you said yes."]

        got = await client.get_task(GetTaskRequest(id=asked.id))
    assert got.status.state == TaskState.TASK_STATE_COMPLETED
    assert texts(got) == ["I drafted the email to Bob.", "Sent: you said yes."]
    history = [(m.role, _said(m)) for m in got.history]
    assert history[0] == (Role.ROLE_USER, "Email Bob that the demo moved to Friday.")
    assert (Role.ROLE_USER, "yes") in history
    ask_at = next(i for i, (r, s) in enumerate(history) if "Send the email to Bob?" in s)
    assert history[ask_at][0] == Role.ROLE_AGENT
    assert history.index((Role.ROLE_USER, "yes")) > ask_at


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_a_finished_task_takes_no_follow_up(hitl_gateway: Any, version: str) -> None:
    from a2a.utils.errors import InvalidParamsError

    async with httpx.AsyncClient(timeout=60) as http:
        card = await card_of(http, f"{hitl_gateway.url}/a2a/hitl")
        client = client_for(card, http, version)
        asked, _ = await _send(client, ask("Email Bob."))
        done, _ = await _send(client, ask("no", asked.id, asked.context_id))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert "you said no" in texts(done)[-1]
        with pytest.raises(InvalidParamsError) as info:
            await _send(client, ask("yes after all", done.id, done.context_id))
    assert "terminal state: completed" in info.value.message


# -- refusals, over the gateway's own app with given replies ------------------------------------
ASKS = [
    event("stream_start", {"request_id": "q"}),
    text("Drafted.", message_id="M1"),
    user_input("Send it?", message_id="M2"),
    event("stream_end", {"status": "completed"}),
]
DONE = [
    event("stream_start", {"request_id": "q"}),
    text("Sent.", message_id="M1"),
    event("stream_end", {"status": "completed"}),
]


class Gate:
    """Holds the replies of a link at message ``at`` until ``open`` is set (a task stays in
    ``submitted``/``input-required`` with ``at`` 0, ``working`` with ``at`` 1)."""

    def __init__(self, link: GivenReplies) -> None:
        self.at = 0
        self.open = asyncio.Event()
        self.open.set()
        ask = link.ask

        async def held_ask(address: str, question: str, **kw: Any) -> Any:
            return _Held(await ask(address, question, **kw), self)

        link.ask = held_ask  # type: ignore[method-assign]


class _Held:
    def __init__(self, reply: Any, gate: Gate) -> None:
        self.reply, self.gate = reply, gate

    @property
    def status(self) -> str | None:
        return self.reply.status  # type: ignore[no-any-return]

    @property
    def chat_messages(self) -> int:
        return self.reply.chat_messages  # type: ignore[no-any-return]

    def cancel(self) -> None:
        self.reply.cancel()

    async def __aiter__(self) -> AsyncIterator[Any]:
        n = 0
        async for m in self.reply:
            if n == self.gate.at:
                await self.gate.open.wait()
            n += 1
            yield m


def _rpc(method: str, words: str, task_id: Any = None, context_id: Any = None) -> dict[str, Any]:
    """A send of ``words`` as ``method``'s version writes it (0.3: ``message/...``)."""
    message: dict[str, Any] = {"messageId": str(uuid4())}
    if "/" in method:
        message.update(role="user", kind="message", parts=[{"kind": "text", "text": words}])
    else:
        message.update(role="ROLE_USER", parts=[{"text": words}])
    if task_id is not None:
        message["taskId"] = task_id
    if context_id is not None:
        message["contextId"] = context_id
    return {"jsonrpc": "2.0", "id": 3, "method": method, "params": {"message": message}}


def _v(method: str, headers: dict[str, str] | None = None) -> dict[str, str]:
    """``headers`` and the A2A-Version a client of ``method``'s version sends."""
    return {**(headers or {}), "A2A-Version": "0.3" if "/" in method else "1.0"}


async def _error(http: httpx.AsyncClient, url: str, body: dict[str, Any], **kw: Any) -> Any:
    """The JSON-RPC error of ``body`` (message/stream answers it as one SSE event)."""
    r = await http.post(url, json=body, **kw)
    assert r.status_code == 200, r.text
    if r.headers["content-type"].startswith("text/event-stream"):
        [line] = [x for x in r.text.splitlines() if x.startswith("data:")]
        reply = json.loads(line[5:])
    else:
        reply = r.json()
    assert "result" not in reply and "Traceback" not in r.text, reply
    return reply["error"]


async def _ask(http: httpx.AsyncClient, url: str, **kw: Any) -> dict[str, Any]:
    r = await http.post(url, json=_rpc("message/send", "email Bob"), **kw)
    task: dict[str, Any] = r.json()["result"]
    assert task["status"]["state"] == "input-required", task
    assert task["status"]["message"]["parts"][0]["text"] == "Send it?"
    return task


@pytest.mark.parametrize(
    "method", ["message/send", "message/stream", "SendMessage", "SendStreamingMessage"]
)
async def test_a_task_id_that_is_not_a_question_to_this_caller_is_refused(
    tmp_path: Path, method: str, caplog: pytest.LogCaptureFixture
) -> None:
    keys = {"k1": {"authorization": "Bearer k1"}, "k2": {"authorization": "Bearer k2"}}
    async with (
        serve_gateway(tmp_path, ["solo"], ASKS, api_keys=list(keys)) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        rpc = f"{url}/a2a/solo"
        asked = await _ask(http, rpc, headers=keys["k1"])
        tid, cid = asked["id"], asked["contextId"]
        n = len(link.questions)
        err = await _error(
            http, rpc, _rpc(method, "yes", "no-such-task"), headers=_v(method, keys["k1"])
        )
        assert err["code"] == -32001 and "no-such-task" in err["message"]
        # another caller's question: not found for them (its existence is not theirs to learn)
        err = await _error(http, rpc, _rpc(method, "yes", tid, cid), headers=_v(method, keys["k2"]))
        assert err["code"] == -32001 and "not found" in err["message"]
        err = await _error(
            http, rpc, _rpc(method, "yes", tid, "another-context"), headers=_v(method, keys["k1"])
        )
        assert err["code"] == -32602 and "another-context" in err["message"]
        assert len(link.questions) == n  # nothing was asked
        # the question still waits for its caller's answer: given without contextId, it goes on
        link.messages = DONE
        r = await http.post(rpc, json=_rpc("message/send", "yes", tid), headers=keys["k1"])
        done = r.json()["result"]
        assert done["id"] == tid and done["status"]["state"] == "completed"
        assert link.asked[-1]["session"] == link.asked[0]["session"]
        assert link.questions[-1][1] == "yes"
        err = await _error(
            http, rpc, _rpc(method, "again", tid, cid), headers=_v(method, keys["k1"])
        )
        assert err["code"] == -32602 and "terminal state: completed" in err["message"]
        for bad, says in (
            (("", None), "taskId is empty"),
            ((" ", None), "taskId is empty"),
            ((42, None), "taskId must be a string, not int"),
            (([tid], None), "taskId must be a string, not list"),
            ((tid, {"id": cid}), "contextId must be a string, not dict"),
        ):
            err = await _error(http, rpc, _rpc(method, "yes", *bad), headers=_v(method, keys["k1"]))
            assert err["code"] == -32602 and says in err["message"], (bad, err)
    assert len(link.questions) == n + 1
    # refused as the client's mistake, never as a failure of the gateway
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_working_or_answered_task_takes_no_second_message(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], ASKS) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        rpc = f"{url}/a2a/solo"
        gate = Gate(link)
        asked = await _ask(http, rpc)
        tid = asked["id"]
        # an answer is on its way (its reply not begun): a second answer is refused
        gate.open.clear()
        link.messages = DONE
        first = asyncio.create_task(http.post(rpc, json=_rpc("message/send", "yes", tid)))
        while len(link.questions) < 2:
            await asyncio.sleep(0.01)
        err = await _error(http, rpc, _rpc("message/stream", "no", tid))
        assert err["code"] == -32602 and "answered already" in err["message"]
        gate.open.set()
        done = (await first).json()["result"]
        assert done["status"]["state"] == "completed" and done["id"] == tid
        # a task still working takes no message either
        gate.at, link.messages = 1, ASKS
        gate.open.clear()
        async with http.stream("POST", rpc, json=_rpc("message/stream", "email Bob")) as r:
            lines = r.aiter_lines()
            line = await anext(lines)
            while not line.startswith("data:"):
                line = await anext(lines)
            working = json.loads(line[5:])["result"]["id"]
            err = await _error(http, rpc, _rpc("message/send", "yes", working))
            assert err["code"] == -32602 and "working" in err["message"]
            gate.open.set()
            rest = [x async for x in lines if x.startswith("data:")]
        assert json.loads(rest[-1][5:])["result"]["status"]["state"] == "input-required"
    assert [q for _, q in link.questions] == ["email Bob", "yes", "email Bob"]


async def test_an_answer_the_gateway_cannot_ask_now_leaves_the_question_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], ASKS, max_replies_per_key=1) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        rpc = f"{url}/a2a/solo"
        gate = Gate(link)
        asked = await _ask(http, rpc)
        gate.open.clear()  # another task of this caller holds its one reply at once
        other = asyncio.create_task(http.post(rpc, json=_rpc("message/send", "other")))
        while len(link.questions) < 2:
            await asyncio.sleep(0.01)
        r = await http.post(rpc, json=_rpc("message/send", "yes", asked["id"]))
        still = r.json()["result"]
        assert still["id"] == asked["id"] and still["status"]["state"] == "input-required"
        said = [p["text"] for p in still["status"]["message"]["parts"] if p["kind"] == "text"]
        assert "not asked: at most 1 replies at once" in said[0] and said[1:] == ["Send it?"]
        # a new task that cannot be asked fails, saying why (not an internal error)
        r = await http.post(rpc, json=_rpc("message/send", "a third"))
        failed = r.json()["result"]
        assert failed["status"]["state"] == "failed"
        assert "at most 1 replies" in failed["status"]["message"]["parts"][0]["text"]
        gate.open.set()
        await other
        link.messages = DONE
        r = await http.post(rpc, json=_rpc("message/send", "yes", asked["id"]))
        assert r.json()["result"]["status"]["state"] == "completed"
    assert [q for _, q in link.questions] == ["email Bob", "other", "yes"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_question_cancelled_takes_no_answer(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], ASKS) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        rpc = f"{url}/a2a/solo"
        asked = await _ask(http, rpc)
        r = await http.post(
            rpc,
            json={
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tasks/cancel",
                "params": {"id": asked["id"]},
            },
        )
        assert r.json()["result"]["status"]["state"] == "canceled"
        err = await _error(http, rpc, _rpc("message/send", "yes", asked["id"]))
        assert err["code"] == -32602 and "terminal state: canceled" in err["message"]
    assert [q for _, q in link.questions] == ["email Bob"]


REVIEW = {
    "kind": "review",
    "payload": {
        "title": "Send it?",
        "approve_cta": {"label": "Send"},
        "reject_cta": {"label": "Cancel"},
    },
    "card_id": "7d3c1b0e-8c9a-4f3e-9a1d-2b6f5e4c3a21",
}
ASKS_A_CARD = [
    event("stream_start", {"request_id": "q"}),
    text("Drafted.", message_id="M1"),
    Message(type="user_input", props={"content": "Send it?", "card": REVIEW}, message_id="M2"),
    event("stream_end", {"status": "completed"}),
]


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_a_card_question_pauses_with_the_card_and_the_answer_resumes_the_task(
    tmp_path: Path, version: str
) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], ASKS_A_CARD) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        client = client_for(await card_of(http, f"{url}/a2a/solo"), http, version)
        asked, _ = await _send(client, ask("email Bob"))
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        question = asked.status.message
        assert _said(question) == "Send it?"
        cards = [
            MessageToDict(p.data)
            for p in question.parts
            if p.HasField("data")
            and MessageToDict(p.metadata).get("agent_stream", {}).get("type") == "card"
        ]
        assert cards == [REVIEW]
        link.messages = DONE
        done, seen = await _send(client, ask("Send", asked.id))
    assert done.id == asked.id and done.status.state == TaskState.TASK_STATE_COMPLETED
    assert {tid for tid, _ in seen} == {asked.id}
    assert texts(done)[-1] == "Sent."
    assert [q for _, q in link.questions] == ["email Bob", "Send"]
    assert link.asked[-1]["session"] == link.asked[0]["session"]


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_subscribe_to_task_reattaches_to_a_running_task(tmp_path: Path, version: str) -> None:
    from a2a.types import SubscribeToTaskRequest

    async with (
        serve_gateway(tmp_path, ["solo"], DONE) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        client = client_for(await card_of(http, f"{url}/a2a/solo"), http, version)
        gate = Gate(link)
        gate.at = 1  # the reply holds after its first message: the task is working
        gate.open.clear()
        first = client.send_message(ask("email Bob"))
        opening = await anext(first)
        tid = opening.task.id if opening.HasField("task") else opening.status_update.task_id
        again = client.subscribe(SubscribeToTaskRequest(id=tid))
        reattached = await anext(again)  # the task as it is now
        assert reattached.task.id == tid
        assert reattached.task.status.state == TaskState.TASK_STATE_WORKING
        gate.open.set()
        rest = await collect(again)
        await collect(first)
    assert rest.states[-1] == TaskState.TASK_STATE_COMPLETED
    ends = [e.artifact_update.artifact.parts for e in rest.events if e.HasField("artifact_update")]
    assert any(p.text == "Sent." for parts in ends for p in parts)
    assert [q for _, q in link.questions] == ["email Bob"]
