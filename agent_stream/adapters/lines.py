"""Wires read one line at a time behind a strict check, and the OpenAI SSE line decoder.

A decoder reading text from outside (``decode --from``) first checks each line with the strict
JSON reader (:mod:`agent_stream.jsontext`) and for the JSON types the adapter would otherwise
coerce or choke on: :class:`Checked` runs the check, then the decoder.
"""

from __future__ import annotations

from collections.abc import Callable

from agent_stream import jsontext
from agent_stream.adapters.framing import sse_payload
from agent_stream.adapters.registry import LineDecoder
from agent_stream.errors import StreamWarning, WireError
from agent_stream.message import Message, Usage, field_type_errors

__all__ = ["Checked", "check_openai_line", "openai_lines"]


class Checked:
    """A line decoder whose every line passes a check first.

    Args:
        inner: the line decoder.
        check: raises WireError for a line that is not right.
    """

    def __init__(self, inner: LineDecoder, check: Callable[[str], None]) -> None:
        self.inner = inner
        self.check = check

    def feed_line(self, line: str) -> list[Message]:
        """The Messages one line gives, once it passed the check.

        Args:
            line: the line, without its line break.

        Raises:
            WireError: the line fails the check.
        """
        self.check(line)
        return self.inner.feed_line(line)

    def close(self) -> list[Message]:
        """The Messages that end what the lines left open."""
        return self.inner.close()

    def drain_warnings(self) -> list[StreamWarning]:
        """The warnings since the last call."""
        return self.inner.drain_warnings()


def check_openai_line(line: str) -> None:
    """Check that a data line's payload is strict JSON, and its usage figures are integers.

    Args:
        line: one line of OpenAI SSE.

    Raises:
        WireError: the line is not SSE, or its payload is not as it must be.
    """
    payload = sse_payload(line)  # WireError for a line that is not SSE
    if payload is None or payload == "[DONE]":
        return
    try:
        chunk = jsontext.loads(payload, WireError)
    except WireError as exc:
        reason = str(exc)
        raise WireError(
            ("data is " if reason.startswith("not JSON") else "data: ") + reason
        ) from None
    usage = chunk.get("usage") if isinstance(chunk, dict) else None
    if isinstance(usage, dict):
        problems = field_type_errors(Usage, usage, "usage")
        if problems:
            raise WireError(problems[0])


def openai_lines() -> Checked:
    """The ``openai`` wire's line decoder: SSE lines checked strictly, then decoded."""
    from agent_stream.adapters.openai import OpenAISSEDecoder

    return Checked(OpenAISSEDecoder(), check_openai_line)
