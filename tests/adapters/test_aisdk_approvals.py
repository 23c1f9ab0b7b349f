"""AISDKEncoder's approvals, sources and message metadata, and the keys each AI SDK major
accepts: every chunk checked against the chunk schema of ai 6.0.325 and of ai 5.0.277 (their
``uiMessageChunkSchema``, the keys copied below from conformance/node_modules/ai*/dist)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import any_message
from ui_reader import read

from agent_stream.adapters.aisdk import DONE, AISDKEncoder, approval_id, encode_messages
from agent_stream.message import Message, event, text, tool_call, tool_result, user_input
from agent_stream.sources.approvals import asking

_PM = "providerMetadata"
_TOOL = {"toolCallId", "toolName", "providerExecuted", _PM, "dynamic"}
# chunk type -> the keys its schema names (besides ``type``), in ai 6 and in ai 5
AI6: dict[str, set[str]] = {
    "text-start": {"id", _PM},
    "text-delta": {"id", "delta", _PM},
    "text-end": {"id", _PM},
    "error": {"errorText"},
    "tool-input-start": _TOOL | {"inputEncoding", "toolMetadata", "title"},
    "tool-input-delta": {"toolCallId", "inputTextDelta"},
    "tool-input-available": _TOOL | {"input", "toolMetadata", "title"},
    "tool-input-error": _TOOL | {"input", "toolMetadata", "errorText", "title"},
    "tool-approval-request": {
        "approvalId",
        "toolCallId",
        "approvalDescriptor",
        "inputSchemaInput",
        "signature",
    },
    "tool-output-available": {
        "toolCallId",
        "output",
        "providerExecuted",
        _PM,
        "toolMetadata",
        "dynamic",
        "preliminary",
    },
    "tool-output-error": {
        "toolCallId",
        "errorText",
        "providerExecuted",
        _PM,
        "toolMetadata",
        "dynamic",
    },
    "tool-output-denied": {"toolCallId"},
    "reasoning-start": {"id", _PM},
    "reasoning-delta": {"id", "delta", _PM},
    "reasoning-end": {"id", _PM},
    "source-url": {"sourceId", "url", "title", _PM},
    "source-document": {"sourceId", "mediaType", "title", "filename", _PM},
    "file": {"url", "mediaType", _PM},
    "data-*": {"id", "data", "transient"},
    "start-step": set(),
    "finish-step": set(),
    "start": {"messageId", "messageMetadata"},
    "finish": {"finishReason", "messageMetadata"},
    "abort": {"reason"},
    "message-metadata": {"messageMetadata"},
}
AI5: dict[str, set[str]] = {
    **{k: v for k, v in AI6.items() if k not in ("tool-approval-request", "tool-output-denied")},
    "tool-input-start": {"toolCallId", "toolName", "providerExecuted", "dynamic"},
    "tool-input-available": _TOOL | {"input"},
    "tool-input-error": _TOOL | {"input", "errorText"},
    "tool-output-available": {"toolCallId", "output", "providerExecuted", "dynamic", "preliminary"},
    "tool-output-error": {"toolCallId", "errorText", "providerExecuted", "dynamic"},
    "abort": set(),
}
REQUIRED = {
    "tool-approval-request": {"approvalId", "toolCallId"},
    "tool-output-denied": {"toolCallId"},
    "source-url": {"sourceId", "url"},
    "source-document": {"sourceId", "mediaType", "title"},
    "message-metadata": {"messageMetadata"},
}


def schema_check(chunks: list[Any], version: int) -> None:
    """Each chunk a type of that version's schema, with only the keys it names."""
    schema = AI6 if version == 6 else AI5
    assert chunks[-1] == DONE
    for c in chunks[:-1]:
        t = c["type"]
        name = "data-*" if t.startswith("data-") else t
        assert name in schema, f"ai {version} has no {t!r} chunk"
        extra = set(c) - {"type"} - schema[name]
        assert not extra, f"ai {version} does not take {sorted(extra)} on {t}"
        assert REQUIRED.get(name, set()) <= set(c), c


CALL = "call_1"
START = event("stream_start", {"request_id": "q1"})
END = event("stream_end", {"status": "completed"})


def paused() -> list[Message]:
    """A reply that ran a tool call up to its approval, as the pydantic-ai source pauses."""
    ask = asking(CALL, "delete_file", {"path": "a"})
    return [
        START,
        event("block_start", {"block_id": "B1", "type": "llm", "model": "m-1"}, block_id="B1"),
        tool_call(CALL, "delete_file", '{"path": "a"}', message_id="M1", block_id="B1"),
        event("block_end", {"block_id": "B1", "status": "completed"}, block_id="B1"),
        Message(type=ask.type, props=ask.props, message_id="M2"),
        END,
    ]


def types(chunks: list[Any]) -> list[str]:
    return [c["type"] for c in chunks if c != DONE]


def test_an_approval_is_a_tool_approval_request_after_the_calls_input() -> None:
    chunks = encode_messages(paused(), message_id="msg-r1")
    schema_check(chunks, 6)
    assert types(chunks).index("tool-approval-request") > types(chunks).index(
        "tool-input-available"
    )
    [req] = [c for c in chunks if c != DONE and c["type"] == "tool-approval-request"]
    assert req == {
        "type": "tool-approval-request",
        "approvalId": approval_id("msg-r1", "M2"),
        "toolCallId": CALL,
    }
    assert not [t for t in types(chunks) if t.startswith("data-")]  # not asked twice
    r = read(chunks)
    assert r.tool(CALL)["state"] == "approval-requested"


def test_ai5_keeps_the_pause_as_a_data_part() -> None:
    chunks = encode_messages(paused(), message_id="msg-r1", ai_version=5)
    schema_check(chunks, 5)
    [data] = [c for c in chunks if c != DONE and c["type"] == "data-user_input"]
    assert data["data"]["kind"] == "approval" and data["data"]["card"]["kind"] == "review"


def test_a_question_or_an_approval_of_a_call_not_on_the_wire_stays_a_data_part() -> None:
    question = asking("c9", "lookup", {}, kind="question")
    msgs = [
        START,
        Message(type="user_input", props=question.props, message_id="M1"),
        user_input("Which city?", message_id="M2"),
        Message(type="user_input", props=asking("nowhere", "f", {}).props, message_id="M3"),
        END,
    ]
    chunks = encode_messages(msgs)
    schema_check(chunks, 6)
    assert types(chunks).count("data-user_input") == 3
    assert "tool-approval-request" not in types(chunks)


@pytest.mark.parametrize("approved", [True, False])
def test_a_continued_message_answers_the_decided_call(approved: bool) -> None:
    msgs = [
        START,
        tool_result(CALL, "delete_file", "deleted a" if approved else "refused", message_id="M1"),
        text("Done.", message_id="M2"),
        END,
    ]
    chunks = encode_messages(msgs, message_id="msg-r1", approvals={CALL: approved})
    schema_check(chunks, 6)
    assert chunks[0] == {"type": "start", "messageId": "msg-r1"}  # the paused message goes on
    if approved:
        assert chunks[1] == {
            "type": "tool-output-available",
            "toolCallId": CALL,
            "output": "deleted a",
            "providerExecuted": True,
            "dynamic": True,
        }
    else:
        assert chunks[1] == {"type": "tool-output-denied", "toolCallId": CALL}
    assert types(chunks).count("tool-output-denied") == (0 if approved else 1)
    assert not [t for t in types(chunks) if t.startswith("data-")]


def test_a_refused_call_without_a_result_is_denied_at_the_end() -> None:
    chunks = encode_messages(
        [START, text("Not deleted.", message_id="M1"), END], approvals={CALL: False, "c2": True}
    )
    schema_check(chunks, 6)
    assert types(chunks)[-2:] == ["tool-output-denied", "finish"]
    assert chunks[-3] == {"type": "tool-output-denied", "toolCallId": CALL}


def test_ai5_ignores_decisions_it_has_no_chunk_for() -> None:
    msgs = [START, tool_result(CALL, "delete_file", "refused", message_id="M1"), END]
    chunks = encode_messages(msgs, approvals={CALL: False}, ai_version=5)
    schema_check(chunks, 5)
    assert "data-tool_result" in types(chunks)


def test_an_unknown_version_is_refused() -> None:
    with pytest.raises(ValueError, match="ai_version"):
        AISDKEncoder(ai_version=7)


def test_citations_are_sources_each_sent_once() -> None:
    web = {"url": "https://example.org/a", "title": "A"}
    msgs = [
        START,
        Message(type="citation", props=web, message_id="C1"),
        Message(type="citation", props={**web}, message_id="C2"),  # the same source again
        Message(type="citation", props={"note": "no source"}, message_id="C3"),
        text("Paris", message_id="T1"),
        Message(  # Anthropic's citations on a text (the anthropic source's shape)
            type="text",
            message_id="T1",
            props={
                "citations": [
                    {"type": "char_location", "cited_text": "x", "document_index": 0},
                    {"type": "page_location", "document_title": "Report", "cited_text": "y"},
                    {"type": "web_search_result_location", **web, "cited_text": "z"},
                ]
            },
            delta=True,
            delta_path="citations",
            delta_action="append",
        ),
        END,
    ]
    for version in (5, 6):
        chunks = encode_messages(msgs, ai_version=version)
        schema_check(chunks, version)
        sources = [c for c in chunks if c != DONE and c["type"].startswith("source-")]
        assert [{k: v for k, v in s.items() if k != "sourceId"} for s in sources] == [
            {"type": "source-url", "url": "https://example.org/a", "title": "A"},
            {"type": "source-document", "mediaType": "text/plain", "title": "document 0"},
            {"type": "source-document", "mediaType": "application/pdf", "title": "Report"},
        ]
        assert len({s["sourceId"] for s in sources}) == 3
        [other] = [c for c in chunks if c != DONE and c["type"] == "data-citation"]
        assert other["data"] == {"note": "no source"}
        assert [p["text"] for p in read(chunks).parts if p["type"] == "text"] == ["Paris"]


def test_the_model_and_usage_are_message_metadata() -> None:
    msgs = [
        START,
        event("block_start", {"block_id": "A", "type": "agent", "model": "sub"}, block_id="A"),
        event(
            "block_start",
            {"block_id": "B", "type": "llm", "model": "inner", "parent_block_id": "A"},
            block_id="B",
        ),
        event("block_end", {"block_id": "B", "status": "completed"}, block_id="B"),
        event("block_end", {"block_id": "A", "status": "completed"}, block_id="A"),
        event("block_start", {"block_id": "C", "type": "llm", "model": "gpt-x"}, block_id="C"),
        text("hi", message_id="M1", block_id="C"),
        event("block_start", {"block_id": "D", "type": "llm", "model": "other"}, block_id="D"),
        event("block_end", {"block_id": "D", "status": "completed"}, block_id="D"),
        event("block_end", {"block_id": "C", "status": "completed"}, block_id="C"),
        event("stream_end", {"status": "completed", "usage": {"total_tokens": 3}}),
    ]
    chunks = encode_messages(msgs)
    schema_check(chunks, 6)
    meta = [c for c in chunks if c != DONE and c["type"] == "message-metadata"]
    assert meta == [{"type": "message-metadata", "messageMetadata": {"model": "gpt-x"}}]
    assert read(chunks).metadata == {"model": "gpt-x", "usage": {"total_tokens": 3}}


def test_ai5_abort_has_no_reason() -> None:
    enc = AISDKEncoder(ai_version=5)
    chunks = enc.feed(text("a", message_id="M1")) + enc.close(status="cancelled")
    schema_check(chunks, 5)
    assert {"type": "abort"} in chunks


@settings(max_examples=200, deadline=None)
@given(st.lists(any_message(), max_size=25), st.sampled_from([5, 6]), st.booleans())
def test_any_stream_keeps_to_its_versions_schema(
    msgs: list[Message], version: int, ended: bool
) -> None:
    enc = AISDKEncoder(ai_version=version, approvals={"c1": False})
    chunks = [c for m in msgs for c in enc.feed(m)]
    chunks += enc.close(status="completed" if ended else None)
    schema_check(chunks, version)


def test_a_continued_message_that_pauses_again_asks_with_new_approval_ids() -> None:
    """The same message, the same part ids: the reply id keeps the approval ids apart."""
    first = encode_messages(paused(), message_id="msg-r1")
    again = encode_messages(paused(), message_id="msg-r1", reply_id="r2", approvals={"c0": True})
    [a] = [c["approvalId"] for c in first if c != DONE and c["type"] == "tool-approval-request"]
    [b] = [c["approvalId"] for c in again if c != DONE and c["type"] == "tool-approval-request"]
    assert again[0] == {"type": "start", "messageId": "msg-r1"}
    assert (a, b) == (approval_id("msg-r1", "M2"), approval_id("r2", "M2")) and a != b
