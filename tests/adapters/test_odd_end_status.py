"""A stream_end whose status is neither ``completed`` nor ``cancelled`` (``error``, or ``lost``
as a fleet replica ends the reply of a replica that died, or anything a peer sends) ends an
OpenAI or AG-UI stream as a failure, as it does the AI SDK UI stream: never as a success."""

from __future__ import annotations

from typing import Any

import pytest

from agent_stream import message as M
from agent_stream.adapters.agui import AGUIEncoder
from agent_stream.adapters.aisdk import AISDKEncoder
from agent_stream.adapters.openai.chunks import ErrorObject
from agent_stream.adapters.openai.encoder import OpenAIEncoder
from agent_stream.message import Message


def ended(status: Any, error: str | None = None) -> list[Message]:
    data: dict[str, Any] = {"status": status}
    if error is not None:
        data["error"] = error
    return [
        M.event("stream_start"),
        M.text("half an answer", message_id="m1"),
        Message(type="event", props={"event": "stream_end", "data": data}),
    ]


def run(enc: Any, msgs: list[Message]) -> list[Any]:
    out: list[Any] = []
    for m in msgs:
        out += enc.feed(m)
    closed: list[Any] = enc.close()
    return out + closed


@pytest.mark.parametrize("status", ["lost", "error", "timeout", "LOST", "x" * 300])
def test_agui_ends_a_run_that_did_not_complete_with_run_error(status: str) -> None:
    out = run(AGUIEncoder(), ended(status, "the replica answering it stopped"))
    names = [type(o).__name__ for o in out]
    assert "RunFinishedEvent" not in names
    err = next(o for o in out if type(o).__name__ == "RunErrorEvent")
    assert err.message == "the replica answering it stopped"
    assert err.code == status


@pytest.mark.parametrize("status", ["lost", "error", "timeout", 7, ""])
def test_openai_ends_a_stream_that_did_not_complete_with_an_error_object(status: Any) -> None:
    out = run(OpenAIEncoder(), ended(status))
    errors = [o for o in out if isinstance(o, ErrorObject)]
    if status == "":  # an empty status is no status: completed
        assert errors == []
    else:
        assert len(errors) == 1


def test_completed_and_cancelled_keep_their_ends() -> None:
    names = [type(o).__name__ for o in run(AGUIEncoder(), ended("completed"))]
    assert names[-1] == "RunFinishedEvent" and "RunErrorEvent" not in names
    cancelled = [type(o).__name__ for o in run(AGUIEncoder(), ended("cancelled"))]
    assert "RunErrorEvent" not in cancelled
    assert not [o for o in run(OpenAIEncoder(), ended("completed")) if isinstance(o, ErrorObject)]


def test_the_ai_sdk_stream_already_fails_a_lost_end() -> None:
    out = run(AISDKEncoder(), ended("lost", "gone"))
    assert out[-3:-1] == [
        {"type": "error", "errorText": "gone"},
        {"type": "finish", "finishReason": "error"},
    ]
