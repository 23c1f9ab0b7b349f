"""Spans of real agents in this process (uagents' in-process dispatcher), read from the
OpenTelemetry SDK's in-memory exporter: the span tree, GenAI attributes, no content unless asked,
a peer's trace context checked, a relay hop continuing the caller's trace."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from inprocess_agents import Pair
from opentelemetry.trace import SpanKind, StatusCode
from span_capture import Spans
from uagents_core.contrib.protocols.chat import ChatMessage, MetadataContent, TextContent

from agent_stream import telemetry
from agent_stream.uagents import ChatRequest, StreamingChat, delegate
from agent_stream.writer import StreamWriter

SECRET = "the secret question"


async def model_and_tool(request: ChatRequest, out: StreamWriter) -> None:
    async with out.block("llm", label="Answer") as b:
        async with b.message("text") as m:
            await m.append("Hello ")
            await m.append("there. The answer is forty-two.")
        async with b.tool("lookup", {"q": request.text}) as t:
            t.result("found")
    out.usage = {"prompt_tokens": 12, "completion_tokens": 7, "model": "replay-1"}


def attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


async def wait_for_spans(spans: Spans, prefix: str, n: int = 1) -> list[Any]:
    for _ in range(200):
        found = spans.named(prefix)
        if len(found) >= n:
            return found
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {prefix!r} span: {[s.name for s in spans.all()]}")


async def ask(pair: Pair, server: Any, question: str | ChatMessage) -> Any:
    client_chat = StreamingChat()
    client = pair.add(f"telemetry client {len(pair.agents)}", client_chat, name="asker")
    reply = await client_chat.ask(client._build_context(), server.address, question)
    await asyncio.wait_for(reply.wait(), 10)
    return reply


async def test_reply_span_tree_with_genai_attributes_and_no_content(
    spans: Spans, pair: Pair
) -> None:
    server = pair.add("telemetry server 1", StreamingChat(model_and_tool), name="answerer")
    reply = await ask(pair, server, SECRET)
    assert reply.completed
    (root,) = await wait_for_spans(spans, "invoke_agent answerer")
    (client,) = spans.named("invoke_agent " + server.address[:20])
    (block,) = spans.named("chat ")
    (tool,) = spans.named("execute_tool lookup")
    # one trace: asker's CLIENT span -> responder's SERVER span -> block -> tool call
    assert client.kind == SpanKind.CLIENT and root.kind == SpanKind.SERVER
    assert {s.context.trace_id for s in (root, client, block, tool)} == {client.context.trace_id}
    assert root.parent is not None and root.parent.span_id == client.context.span_id
    assert root.parent.is_remote
    assert block.parent is not None and block.parent.span_id == root.context.span_id
    assert tool.parent is not None and tool.parent.span_id == block.context.span_id
    a = attrs(root)
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.agent.name"] == "answerer"
    assert a["gen_ai.usage.input_tokens"] == 12 and a["gen_ai.usage.output_tokens"] == 7
    assert a["gen_ai.request.model"] == "replay-1"
    assert a["agent_stream.status"] == "completed" and a["agent_stream.chat_messages"] >= 1
    for figure in ("resends", "keepalives", "gaps_repaired"):
        assert a[f"agent_stream.{figure}"] == 0, figure  # a clean reply: none of them
    assert a["agent_stream.time_to_first_text"] >= 0
    assert attrs(block)["gen_ai.operation.name"] == "chat"
    assert attrs(tool)["gen_ai.tool.name"] == "lookup"
    c = attrs(client)
    assert c["agent_stream.status"] == "completed" and c["agent_stream.chat_messages"] >= 1
    assert c["agent_stream.time_to_first_text"] >= 0
    assert "agent_stream.resends" in c and "agent_stream.keepalives" in c
    # not one span per chunk, and no content anywhere by default
    assert len(spans.all()) == 4
    for s in spans.all():
        for v in (s.attributes or {}).values():
            assert SECRET not in str(v) and "forty-two" not in str(v)


async def test_content_is_recorded_only_with_the_genai_switch(
    spans: Spans, pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(telemetry.CAPTURE_ENV, "true")
    telemetry.configure(tracer_provider=spans.provider)
    server = pair.add("telemetry server 2", StreamingChat(model_and_tool), name="answerer")
    await ask(pair, server, SECRET)
    (root,) = await wait_for_spans(spans, "invoke_agent answerer")
    a = attrs(root)
    assert SECRET in str(a["gen_ai.input.messages"])
    assert "The answer is forty-two." in str(a["gen_ai.output.messages"])
    (tool,) = spans.named("execute_tool lookup")
    assert SECRET in str(attrs(tool)["gen_ai.tool.call.arguments"])


@pytest.mark.parametrize(
    "bad",
    [
        "garbage",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # all-zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # all-zero span id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # version ff
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  # upper case
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "",
    ],
)
async def test_a_malformed_traceparent_from_a_peer_starts_a_new_trace(
    spans: Spans, pair: Pair, caplog: pytest.LogCaptureFixture, bad: str
) -> None:
    from agent_stream.telemetry import spans as spans_module

    spans_module._warned_at[0] = 0.0
    server = pair.add(
        f"telemetry server bad {bad[:8]}", StreamingChat(model_and_tool), name="answerer"
    )
    client = pair.add(f"telemetry raw client {bad[:8]}", StreamingChat())
    question = ChatMessage(
        content=[
            MetadataContent(
                metadata={
                    "agent_stream": "1",
                    "accept": "tags",
                    "traceparent": bad,
                    "tracestate": "a=b",
                    # a peer cannot set attributes of our spans
                    "gen_ai.agent.name": "evil",
                    "service.name": "evil",
                }
            ),
            TextContent(text="hi"),
        ]
    )
    with caplog.at_level(logging.WARNING, logger="agent_stream.telemetry"):
        await client._build_context().send(server.address, question)
        (root,) = await wait_for_spans(spans, "invoke_agent answerer")
    assert root.parent is None  # a new trace, not the peer's
    assert format(root.context.trace_id, "032x") not in bad
    assert "malformed traceparent" in caplog.text
    assert attrs(root)["gen_ai.agent.name"] == "answerer"
    assert "evil" not in str(root.attributes) and "evil" not in str(root.resource.attributes)


async def test_a_well_formed_traceparent_is_continued_with_its_tracestate(
    spans: Spans, pair: Pair
) -> None:
    server = pair.add("telemetry server tp", StreamingChat(model_and_tool), name="answerer")
    client = pair.add("telemetry raw client tp", StreamingChat())
    tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    question = ChatMessage(
        content=[
            MetadataContent(
                metadata={
                    "agent_stream": "1",
                    "accept": "tags",
                    "traceparent": tp,
                    "tracestate": "vendor=abc,other=1",
                }
            ),
            TextContent(text="hi"),
        ]
    )
    await client._build_context().send(server.address, question)
    (root,) = await wait_for_spans(spans, "invoke_agent answerer")
    assert root.context.trace_id == 0x4BF92F3577B34DA6A3CE929D0E0E4736
    assert root.parent is not None and root.parent.span_id == 0x00F067AA0BA902B7
    assert root.context.trace_state.get("vendor") == "abc"


async def test_a_relay_hop_continues_the_callers_trace_under_its_block(
    spans: Spans, pair: Pair
) -> None:
    leaf = pair.add("telemetry leaf agent", StreamingChat(model_and_tool), name="leaf")
    planner_chat: StreamingChat

    async def plan(request: ChatRequest, out: StreamWriter) -> None:
        async with out.block("plan", label="Plan") as b:
            await b.relay(
                delegate(planner_chat, request, leaf.address, "sub question"), name="leaf"
            )
            await b.text("done")

    planner_chat = StreamingChat(plan)
    planner = pair.add("telemetry planner", planner_chat, name="planner")
    reply = await ask(pair, planner, "top question")
    assert reply.completed
    await wait_for_spans(spans, "invoke_agent planner")
    (leaf_root,) = [
        s for s in await wait_for_spans(spans, "invoke_agent leaf") if s.kind == SpanKind.SERVER
    ]
    (plan_block,) = spans.named("plan Plan")
    by_id = {s.context.span_id: s for s in spans.all()}
    assert len({s.context.trace_id for s in spans.all()}) == 1
    # leaf reply <- the planner's relay block (its question's span) <- plan block <- reply
    hop = by_id[leaf_root.parent.span_id]  # type: ignore[union-attr]
    assert hop.name == "invoke_agent leaf" and hop.kind == SpanKind.CLIENT
    assert attrs(hop)["agent_stream.peer"] == leaf.address
    assert attrs(hop)["agent_stream.block.type"] == "agent"
    assert attrs(hop)["agent_stream.status"] == "completed"
    assert hop.parent is not None and hop.parent.span_id == plan_block.context.span_id
    planner_root = by_id[plan_block.parent.span_id]  # type: ignore[union-attr]
    assert planner_root.name == "invoke_agent planner"
    # the relayed sub-agent's blocks are the leaf's own spans, not copied by the planner
    chats = spans.named("chat ")
    assert len(chats) == 1 and chats[0].parent.span_id == leaf_root.context.span_id  # type: ignore[union-attr]


async def test_a_failing_responder_marks_its_span_error(spans: Spans, pair: Pair) -> None:
    async def broken(request: ChatRequest, out: StreamWriter) -> None:
        async with out.block("llm", label="Answer") as b:
            await b.text("partial")
            raise RuntimeError("model down")

    server = pair.add("telemetry server broken", StreamingChat(broken), name="broken")
    await ask(pair, server, "q")
    (root,) = await wait_for_spans(spans, "invoke_agent broken")
    assert root.status.status_code == StatusCode.ERROR
    (block,) = spans.named("chat ")
    assert block.status.status_code == StatusCode.ERROR
