"""OpenAI SSE text in, Messages out: ``OpenAISSEDecoder`` reads ``data:`` lines into the decoder."""

from __future__ import annotations

import json

from agent_stream import jsontext
from agent_stream.adapters._tracking import Warnings
from agent_stream.adapters.framing import sse_payload
from agent_stream.adapters.openai.chunks import DONE
from agent_stream.adapters.openai.decoder import OpenAIDecoder
from agent_stream.errors import StreamWarning, WarningCode, WireError
from agent_stream.message import Message

__all__ = ["OpenAISSEDecoder"]

_DONE = DONE.json()


class OpenAISSEDecoder(Warnings):
    """OpenAI SSE text, one line at a time, into Messages (``agent-stream decode --from openai``).

    ``data: {...}`` lines carry chunks, ``data: [DONE]`` ends the stream; blank lines, comments
    and ``event:``/``id:``/``retry:`` fields are skipped; a bare JSON object line is read as a
    chunk too. A data line that is not JSON, or not a chunk, raises WireError.
    """

    def __init__(self) -> None:
        super().__init__()
        self.decoder = OpenAIDecoder()
        self.done = False

    def feed_line(self, line: str) -> list[Message]:
        """The Messages one line of OpenAI SSE gives.

        Args:
            line: the line, without its line break.

        Raises:
            WireError: the line is not SSE, or its data is not a chunk.
        """
        payload = sse_payload(line)
        if payload is None:
            return []
        if payload == _DONE:
            self.done = True
            return []
        if self.done:
            self._warn(WarningCode.AFTER_DONE, "data after [DONE]; ignored")
            return []
        try:
            chunk = jsontext.loads(payload, WireError)
        except json.JSONDecodeError as exc:
            raise WireError(f"data is not JSON: {exc.msg} at column {exc.colno}") from None
        return self.decoder.feed(chunk)

    def close(self) -> list[Message]:
        """The end of the input: what the decoder closes (a cut stream ends with an error)."""
        return self.decoder.close(done=self.done)

    def drain_warnings(self) -> list[StreamWarning]:
        """The warnings since the last call."""
        return super().drain_warnings() + self.decoder.drain_warnings()
