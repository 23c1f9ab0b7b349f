"""An ``error`` Message inside a sub-agent fails that sub-agent, not the OpenAI stream: the client
(the ``openai`` package, through ``client_view``) gets a progress line and the reply's own end.
An error anywhere else still ends the stream with an error object."""

from __future__ import annotations

from typing import Any

import pytest
from openai_fixtures import client_view

from agent_stream.adapters.openai import OpenAIEncoder, frame_sse
from agent_stream.message import Message, error, event, text

END = event("stream_end", {"status": "completed"})


def run(msgs: list[Message], **kw: Any) -> dict[str, Any]:
    enc = OpenAIEncoder(**kw)
    items = [i for m in msgs for i in enc.feed(m)] + enc.close()
    return client_view([frame_sse(i) for i in items])


def bstart(bid: str, type_: str, **data: Any) -> Message:
    return event("block_start", {"block_id": bid, "type": type_, **data}, block_id=bid)


def bend(bid: str, status: str = "completed") -> Message:
    return event("block_end", {"block_id": bid, "status": status}, block_id=bid)


def recovered(**agent: Any) -> list[Message]:
    """A sub-agent whose nested model call fails; the caller answers without it."""
    return [
        bstart("A1", "agent", **agent),
        bstart("B2", "llm", parent_block_id="A1"),
        text("Checking", message_id="M1", block_id="B2"),
        error("weather service down", code="upstream", block_id="B2"),
        bend("B2", "error"),
        bend("A1", "error"),
        text("Without the weather, then.", message_id="M2"),
        END,
    ]


@pytest.mark.parametrize("policy", ["agent", "client"])
def test_a_recovered_sub_agent_error_is_a_progress_line_and_the_reply_finishes(
    policy: str,
) -> None:
    view = run(recovered(agent_name="Weather", label="Weather lookup"), tool_calls=policy)
    assert view["error"] is None and view["finish"] == ["stop"]
    assert view["content"] == "CheckingWithout the weather, then."
    assert view["reasoning"] == "✗ Weather → weather service down\n"


@pytest.mark.parametrize(
    ("agent", "name"),
    [
        ({"label": "Lookup"}, "Lookup"),  # no agent_name: the label
        ({"agent_name": 7, "label": ""}, "agent"),  # neither usable
        ({}, "agent"),
    ],
)
def test_the_line_names_the_sub_agent_by_what_its_block_gives(
    agent: dict[str, Any], name: str
) -> None:
    view = run(recovered(**agent))
    assert view["reasoning"] == f"✗ {name} → weather service down\n"
    assert view["finish"] == ["stop"]


def test_an_empty_error_text_still_says_the_sub_agent_failed() -> None:
    msgs = [bstart("A1", "agent", agent_name="W"), error("", block_id="A1"), bend("A1"), END]
    view = run(msgs)
    assert view["reasoning"] == "✗ W → the sub-agent failed\n" and view["finish"] == ["stop"]


def test_the_line_starts_on_its_own_line_and_keeps_the_threads_order() -> None:
    msgs = [
        bstart("A1", "agent", agent_name="W"),
        Message(type="thinking", message_id="R1", props={"content": "Asking W"}),
        error("down", block_id="A1"),
        bend("A1", "error"),
        END,
    ]
    view = run(msgs)
    assert view["reasoning"] == "Asking W\n✗ W → down\n"


@pytest.mark.parametrize(
    "msgs",
    [
        [error("boom")],  # the reply's own error
        [bstart("L1", "llm"), error("boom", block_id="L1")],  # a block that is no sub-agent
        [bstart("A1", "agent"), bend("A1"), error("boom", block_id="A1")],  # ended sub-agent
        [error("boom", block_id="nowhere")],  # a block never started
        [bstart("L1", "llm", parent_block_id="L1"), error("boom", block_id="L1")],  # own parent
        [
            bstart("L1", "llm", parent_block_id="L2"),
            bstart("L2", "llm", parent_block_id="L1"),  # a cycle, and no agent in it
            error("boom", block_id="L2"),
        ],
    ],
)
def test_an_error_outside_an_open_sub_agent_still_ends_the_stream(msgs: list[Message]) -> None:
    view = run([text("partial", message_id="M0"), *msgs, text("after", message_id="M9"), END])
    assert view["error"] == {"message": "boom", "code": None}
    assert view["finish"] == [] and view["content"] == "partial"


def test_a_failed_reply_after_a_recovered_sub_agent_error_still_fails() -> None:
    msgs = recovered(agent_name="Weather")[:-1]
    msgs.append(event("stream_end", {"status": "error", "error": "planner crashed"}))
    view = run(msgs)
    assert view["reasoning"] == "✗ Weather → weather service down\n"
    assert view["error"] == {"message": "planner crashed", "code": "error"}
    assert view["finish"] == []
