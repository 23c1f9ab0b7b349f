"""A typed view of event Messages: the one place that reads an event's ``data`` dict.

Lifecycle events are built with the models of :mod:`agent_stream.message` (``StreamEndData``
...), but they arrive as JSON from anywhere, so readers must not trust the shapes. ``EventView``
reads each field once, with one rule per kind of field:

- ids (``message_id``, ``thread_id``, ``block_id``): the data's value when it is a non-empty
  string, else the Message's own field;
- other strings (``type``, ``label``, ``status``, ``finish_reason``): the string as given, None
  when absent or not a string; ``error`` and ``request_id``: a non-empty string or None;
- numbers (``chunk_count``, ``duration_ms``, ``timestamp``): an int (a number for the timestamp),
  never a bool, else None; ``usage``: the object, else None.

``end_status`` is how a stream, thread or block ended for a wire: ``completed`` when the status
is absent or empty, the status when it is a string, ``error`` for anything else.
"""

from __future__ import annotations

from typing import Any

from agent_stream.message import EVENT, Message

__all__ = ["EventView", "view"]


class EventView:
    """The name and data of one event Message, read through typed properties.

    Args:
        msg: the event Message.
    """

    __slots__ = ("data", "msg", "name")

    def __init__(self, msg: Message) -> None:
        self.msg = msg
        self.name: str | None = msg.event
        props = msg.props
        data = props.get("data") if props else None
        self.data: dict[str, Any] = data if isinstance(data, dict) else {}
        """The event's data as sent (for wires that forward it whole); empty when absent."""

    # -- ids ----------------------------------------------------------------------------------
    def _id(self, key: str, fallback: str | None) -> str | None:
        v = self.data.get(key)
        return v if isinstance(v, str) and v else fallback

    @property
    def message_id(self) -> str | None:
        return self._id("message_id", self.msg.message_id)

    @property
    def thread_id(self) -> str | None:
        return self._id("thread_id", self.msg.thread_id)

    @property
    def block_id(self) -> str | None:
        return self._id("block_id", self.msg.block_id)

    # -- strings ------------------------------------------------------------------------------
    def _str(self, key: str) -> str | None:
        v = self.data.get(key)
        return v if isinstance(v, str) else None

    @property
    def type(self) -> str | None:
        """message_start/end: the message's type; thread/block start: their kind."""
        return self._str("type")

    @property
    def label(self) -> str | None:
        return self._str("label")

    @property
    def status(self) -> str | None:
        return self._str("status")

    @property
    def has_status(self) -> bool:
        """True when the data names a status at all (even an odd one)."""
        return self.data.get("status") is not None

    @property
    def end_status(self) -> str:
        v = self.data.get("status")
        if not v:
            return "completed"
        return v if isinstance(v, str) else "error"

    @property
    def finish_reason(self) -> str | None:
        return self._str("finish_reason")

    @property
    def error(self) -> str | None:
        v = self.data.get("error")
        return v if isinstance(v, str) and v else None

    @property
    def request_id(self) -> str | None:
        v = self.data.get("request_id")
        return v if isinstance(v, str) and v else None

    # -- numbers and objects ------------------------------------------------------------------
    def _int(self, key: str) -> int | None:
        v = self.data.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    @property
    def chunk_count(self) -> int | None:
        return self._int("chunk_count")

    @property
    def duration_ms(self) -> int | None:
        return self._int("duration_ms")

    @property
    def timestamp(self) -> int | float | None:
        v = self.data.get("timestamp")
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    @property
    def usage(self) -> dict[str, Any] | None:
        v = self.data.get("usage")
        return v if isinstance(v, dict) else None


def view(msg: Message) -> EventView | None:
    """The typed view of an event Message (None for any other Message).

    Args:
        msg: the Message.
    """
    return EventView(msg) if msg.type == EVENT else None
