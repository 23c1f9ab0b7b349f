"""AG-UI interrupts at the gateway's ``/agui`` (its own app on 127.0.0.1, agents answering given
replies): a reply that asks ends RUN_FINISHED with the interrupt outcome; a new run on the same
thread whose ``resume`` answers it is asked in the paused run's envelope session, its question
the answer the agent reads. A resume for nothing paused, for another key's or another thread's
run, naming an unknown interrupt, leaving one unanswered or answering twice is refused with
HTTP 400 and a RUN_ERROR body, nothing asked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_harness import sse_events
from inprocess_gateway import GivenReplies, serve_gateway
from wire_checks import check_agui

from agent_stream.message import Message, event, text, tool_call, user_input
from agent_stream.sources.approvals import asking, question_card

pytestmark = pytest.mark.integration

K1 = {"authorization": "Bearer k1"}
K2 = {"authorization": "Bearer k2"}

ASKS = [
    event("stream_start", {"request_id": "q"}),
    text("Drafted.", message_id="M1"),
    tool_call("c1", "delete_file", '{"path": "a"}', message_id="T1"),
    asking("c1", "delete_file", {"path": "a"}),
    event("stream_end", {"status": "completed"}),
]
QUESTION = [
    event("stream_start", {"request_id": "q"}),
    user_input("Which day?", message_id="Q1").model_copy(
        update={"props": {"content": "Which day?", "card": question_card("Which day?")}}
    ),
    event("stream_end", {"status": "completed"}),
]
DONE = [
    event("stream_start", {"request_id": "q"}),
    text("Deleted.", message_id="M2"),
    event("stream_end", {"status": "completed"}),
]


def body(thread: str = "t1", run: str = "r1", **extra: Any) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": run,
        "messages": [{"id": "u1", "role": "user", "content": "delete a"}],
        **extra,
    }


async def run(
    c: httpx.AsyncClient, payload: dict[str, Any], who: dict[str, str] = K1
) -> list[dict[str, Any]]:
    r = await c.post("/agui", json=payload, headers=who)
    assert r.status_code == 200, r.text
    events = [e["data"] for e in sse_events(r.text)]
    check_agui(events)
    return events


async def refused(
    c: httpx.AsyncClient, payload: dict[str, Any], code: str, who: dict[str, str] = K1
) -> str:
    r = await c.post("/agui", json=payload, headers=who)
    assert r.status_code == 400, r.text
    err = r.json()
    assert err["type"] == "RUN_ERROR" and err["code"] == code, err
    return str(err["message"])


async def paused_run(c: httpx.AsyncClient, link: GivenReplies, **kw: Any) -> list[Any]:
    """Run a question whose reply asks; the interrupts of its RUN_FINISHED (once recorded)."""
    link.messages = list(ASKS)
    last = (await run(c, body(**kw)))[-1]
    assert last["type"] == "RUN_FINISHED" and last["outcome"]["type"] == "interrupt"
    return list(last["outcome"]["interrupts"])


@pytest.fixture
async def gw(tmp_path: Path) -> Any:
    gateway = serve_gateway(tmp_path, ["ops"], ASKS, api_keys=["k1", "k2"])
    async with gateway as (url, link), httpx.AsyncClient(base_url=url, timeout=30) as c:
        yield c, link


async def test_a_resolved_approval_resumes_the_paused_run_in_its_session(gw: Any) -> None:
    c, link = gw
    [intr] = await paused_run(c, link)
    assert intr["reason"] == "tool_approval" and intr["toolCallId"] == "c1"
    link.messages = list(DONE)
    resume = [{"interruptId": intr["id"], "status": "resolved"}]
    events = await run(c, body(run="r2", resume=resume))
    assert events[-1]["outcome"] == {"type": "success"}
    assert "Deleted." in "".join(e.get("delta", "") for e in events)
    first, second = link.asked
    assert second["question"] == "yes" and second["session"] == first["session"] is not None


async def test_a_cancelled_approval_is_the_agents_refusal(gw: Any) -> None:
    c, link = gw
    [intr] = await paused_run(c, link)
    link.messages = list(DONE)
    await run(c, body(run="r2", resume=[{"interruptId": intr["id"], "status": "cancelled"}]))
    assert link.asked[-1]["question"] == "no"


async def test_a_form_question_is_answered_by_its_value(gw: Any) -> None:
    c, link = gw
    link.messages = list(QUESTION)
    [q] = (await run(c, body()))[-1]["outcome"]["interrupts"]
    assert q["reason"] == "input_required" and q["responseSchema"]["required"] == ["answer"]
    link.messages = list(DONE)
    resolved = [{"interruptId": q["id"], "status": "resolved", "payload": {"answer": "Friday"}}]
    await run(c, body(run="r2", resume=resolved))
    assert link.asked[-1]["question"] == "Friday"


async def test_a_new_question_on_the_thread_forgets_its_pause(gw: Any) -> None:
    c, link = gw
    [intr] = await paused_run(c, link)
    link.messages = list(DONE)
    assert (await run(c, body(run="r2")))[-1]["outcome"] == {"type": "success"}
    resume = [{"interruptId": intr["id"], "status": "resolved"}]
    await refused(c, body(run="r3", resume=resume), "unknown_interrupt")
    assert [a["question"] for a in link.asked] == ["delete a", "delete a"]


async def test_a_resume_for_nothing_paused_is_refused_and_nothing_asked(gw: Any) -> None:
    c, link = gw
    resume = [{"interruptId": "x", "status": "resolved"}]
    await refused(c, body(resume=resume), "unknown_interrupt")
    assert link.asked == []


async def test_another_keys_or_threads_pause_is_not_resumed(gw: Any) -> None:
    c, link = gw
    [intr] = await paused_run(c, link)
    resume = [{"interruptId": intr["id"], "status": "resolved"}]
    await refused(c, body(run="r2", resume=resume), "unknown_interrupt", who=K2)
    await refused(c, body(thread="t2", run="r2", resume=resume), "unknown_interrupt")
    assert len(link.asked) == 1
    # its owner, on its thread, still resumes it
    link.messages = list(DONE)
    await run(c, body(run="r3", resume=resume))
    assert link.asked[-1]["question"] == "yes"


async def test_a_resume_must_answer_exactly_the_pauses_interrupts_once(gw: Any) -> None:
    c, link = gw
    [intr] = await paused_run(c, link)
    iid = intr["id"]
    await refused(
        c, body(resume=[{"interruptId": "nope", "status": "resolved"}]), "unknown_interrupt"
    )
    await refused(
        c,
        body(resume=[{"interruptId": iid, "status": "resolved"}] * 2),
        "invalid_resume",
    )
    await refused(
        c,
        body(resume=[{"interruptId": iid, "status": "resolved", "payload": [1]}]),
        "invalid_resume",
    )
    assert len(link.asked) == 1
    link.messages = list(DONE)
    await run(c, body(run="r2", resume=[{"interruptId": iid, "status": "resolved"}]))
    # answered once: a second resume of the same pause is refused
    msg = await refused(
        c, body(run="r3", resume=[{"interruptId": iid, "status": "resolved"}]), "unknown_interrupt"
    )
    assert "waiting" in msg
    assert len(link.asked) == 2


async def test_a_pause_with_two_questions_needs_both_answered(tmp_path: Path) -> None:
    two = [*ASKS[:-1], asking("c2", "delete_file", {"path": "b"}), ASKS[-1]]
    gateway = serve_gateway(tmp_path, ["ops"], two)
    async with gateway as (url, link), httpx.AsyncClient(base_url=url, timeout=30) as c:
        a, b = (await run(c, body(), who={}))[-1]["outcome"]["interrupts"]
        one = [{"interruptId": a["id"], "status": "resolved"}]
        msg = await refused(c, body(run="r2", resume=one), "unanswered_interrupt", who={})
        assert b["id"] in msg
        link.messages = list(DONE)
        both = [*one, {"interruptId": b["id"], "status": "cancelled"}]
        await run(c, body(run="r3", resume=both), who={})
        assert link.asked[-1]["question"] == "no"


async def test_a_malformed_resume_is_the_routes_invalid_input(gw: Any) -> None:
    c, link = gw
    await paused_run(c, link)
    for bad in ("yes", [{"interruptId": 3}], [{"status": "resolved"}], [{"interruptId": "x"}]):
        await refused(c, body(run="r2", resume=bad), "invalid_input")
    assert len(link.asked) == 1


async def test_a_resume_that_cannot_be_asked_leaves_the_pause_waiting(tmp_path: Path) -> None:
    gateway = serve_gateway(tmp_path, ["ops"], QUESTION, max_question_bytes=100)
    async with gateway as (url, link), httpx.AsyncClient(base_url=url, timeout=30) as c:
        [q] = (await run(c, body(), who={}))[-1]["outcome"]["interrupts"]
        big = [{"interruptId": q["id"], "status": "resolved", "payload": {"answer": "x" * 200}}]
        r = await c.post("/agui", json=body(run="r2", resume=big))
        assert r.status_code == 413 and r.json()["type"] == "RUN_ERROR"
        link.messages = list(DONE)
        ok = [{"interruptId": q["id"], "status": "resolved", "payload": {"answer": "Friday"}}]
        await run(c, body(run="r3", resume=ok), who={})
        assert [a["question"] for a in link.asked] == ["delete a", "Friday"]


class _Lingering:
    """A reply that lingers ``after`` seconds past its last Message before it ends (its
    stream_end read, its log not yet ended)."""

    def __init__(self, reply: Any, after: float) -> None:
        self.reply, self.after = reply, after

    @property
    def status(self) -> str | None:
        return self.reply.status  # type: ignore[no-any-return]

    @property
    def chat_messages(self) -> int:
        return self.reply.chat_messages  # type: ignore[no-any-return]

    async def __aiter__(self) -> AsyncIterator[Message]:
        async for m in self.reply:
            yield m
        await asyncio.sleep(self.after)

    def cancel(self) -> None:
        self.reply.cancel()


async def test_a_resume_sent_as_soon_as_run_finished_arrives_is_taken(gw: Any) -> None:
    c, link = gw
    ask = link.ask

    async def lingering_ask(address: str, question: str, **kw: Any) -> Any:
        return _Lingering(await ask(address, question, **kw), 0.5)

    link.ask = lingering_ask
    [intr] = await paused_run(c, link)  # RUN_FINISHED read while the run's log is still open
    link.messages = list(DONE)
    await run(c, body(run="r2", resume=[{"interruptId": intr["id"], "status": "resolved"}]))
    assert [a["question"] for a in link.asked] == ["delete a", "yes"]
