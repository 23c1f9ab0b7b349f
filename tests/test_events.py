"""EventView: the one reader of event data, with one rule per kind of field."""

from __future__ import annotations

from agent_stream.events import EventView, view
from agent_stream.message import MessageEndData, event, lifecycle, text


def test_ids_come_from_the_data_else_from_the_message() -> None:
    ev = EventView(event("message_end", {"message_id": "M2"}, message_id="M1", thread_id="T1"))
    assert (ev.message_id, ev.thread_id, ev.block_id) == ("M2", "T1", None)
    odd = EventView(
        event("message_end", {"message_id": "", "thread_id": 5}, message_id="M1", thread_id="T1")
    )
    assert (odd.message_id, odd.thread_id) == ("M1", "T1")


def test_typed_fields_ignore_values_of_the_wrong_type() -> None:
    ev = EventView(
        event(
            "stream_end",
            {
                "status": 5,
                "error": "",
                "usage": [1],
                "finish_reason": "stop",
                "timestamp": True,
                "chunk_count": False,
                "duration_ms": 3,
            },
        )
    )
    assert ev.status is None and ev.has_status
    assert ev.error is None and ev.usage is None and ev.timestamp is None
    assert ev.chunk_count is None and ev.duration_ms == 3 and ev.finish_reason == "stop"


def test_end_status_is_completed_when_absent_and_error_when_odd() -> None:
    assert EventView(event("stream_end", {})).end_status == "completed"
    assert EventView(event("stream_end", {"status": ""})).end_status == "completed"
    assert EventView(event("stream_end", {"status": "cancelled"})).end_status == "cancelled"
    assert EventView(event("stream_end", {"status": 1})).end_status == "error"


def test_a_model_built_event_reads_back_as_it_was_built() -> None:
    msg = lifecycle(
        "message_end", MessageEndData(message_id="M1", type="text", chunk_count=4, status="error")
    )
    ev = view(msg)
    assert ev is not None and ev.name == "message_end"
    assert (ev.message_id, ev.type, ev.chunk_count, ev.status) == ("M1", "text", 4, "error")
    assert view(text("hi")) is None
    assert EventView(text("hi")).data == {}
