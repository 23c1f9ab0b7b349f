"""One exception hierarchy for everything agent_stream rejects, and warnings it reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


class StreamError(Exception):
    """Base of every error agent_stream raises for bad input or bad use."""


class InvalidMessage(StreamError):
    """A Message (or its JSON) does not follow the DSL."""


class DeltaError(StreamError):
    """A delta cannot be applied: bad path, bad action, or incompatible values."""


class UnknownMessage(StreamError):
    """A chunk refers to a message the receiver does not know."""


class ChunkerConfigError(StreamError, ValueError):
    """TextChunker options are inconsistent."""


class WireError(StreamError):
    """A wire item (ChatMessage, SSE line, chunk dict) cannot be read."""


class InvalidJSON(StreamError, ValueError):
    """Text is not strict JSON.

    Bad syntax or UTF-8, nested too deep, a number out of range, NaN/Infinity, a lone surrogate
    (see ``agent_stream.jsontext``).
    """


class UsageError(StreamError):
    """A command-line option or argument is wrong."""


class MissingDependency(StreamError, ImportError):
    """An optional extra is not installed (the message names the pip command)."""


def require(module: str, extra: str, what: str) -> None:
    """Check that an optional dependency can be imported.

    Args:
        module: the module's import name.
        extra: the agent-stream extra that installs it (``pip install 'agent-stream[extra]'``).
        what: what needs it, named in the error.

    Raises:
        MissingDependency: ``module`` cannot be found.
    """
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingDependency(
            f"{what} needs the {module!r} package: pip install 'agent-stream[{extra}]'"
        )


@dataclass(frozen=True)
class StreamWarning:
    """Something was wrong but the stream goes on (lost chunks, duplicates, unknown ids).

    Attributes:
        code: what kind of trouble, one of :class:`WarningCode`.
        detail: what happened, for people to read.
        chunk_id: the chunk concerned, if any.
        message_id: the message concerned, if any.
        thread_id: the thread concerned, if any.
    """

    code: str
    detail: str
    chunk_id: str | None = None
    message_id: str | None = None
    thread_id: str | None = None

    def __str__(self) -> str:
        where = ", ".join(
            f"{k}={v}"
            for k, v in (
                ("chunk", self.chunk_id),
                ("message", self.message_id),
                ("thread", self.thread_id),
            )
            if v
        )
        return f"{self.code}: {self.detail}" + (f" ({where})" if where else "")


class WarningCode:
    """The catalogue of ``StreamWarning.code`` values: plain strings, each described in CODES."""

    # Encoders (what a wire could not carry as the Messages said).
    REWRITE: Final = "rewrite"
    AFTER_END: Final = "after_end"
    BAD_DELTA: Final = "bad_delta"
    INCOMPLETE: Final = "incomplete"
    LATE_TOOL_NAME: Final = "late_tool_name"
    LATE_TOOL_ID: Final = "late_tool_id"
    DUPLICATE_TOOL_ID: Final = "duplicate_tool_id"
    # The OpenAI decoder and SSE reader.
    AFTER_DONE: Final = "after_done"
    LATE_FRAGMENT: Final = "late_fragment"
    OTHER_CHOICE: Final = "other_choice"
    # The A2A decoder.
    UNKNOWN_ARTIFACT: Final = "unknown_artifact"
    FILE_BYTES: Final = "file_bytes"
    # The assembler.
    DUPLICATE_CHUNK: Final = "duplicate_chunk"
    UNKNOWN_MESSAGE: Final = "unknown_message"
    CHUNKS_LOST: Final = "chunks_lost"
    # The chat protocol decoder and client.
    BAD_MESSAGE: Final = "bad_message"
    BAD_INPUT: Final = "bad_input"
    BAD_METADATA: Final = "bad_metadata"
    BAD_CARD: Final = "bad_card"
    DUPLICATE_CHAT_MESSAGE: Final = "duplicate_chat_message"
    LATE_CHAT_MESSAGE: Final = "late_chat_message"
    GAP: Final = "gap"
    STREAM_TIMEOUT: Final = "stream_timeout"
    MESSAGE_TOO_LARGE: Final = "message_too_large"
    STREAM_TOO_LARGE: Final = "stream_too_large"
    STREAM_NOT_OPEN: Final = "stream_not_open"
    STREAMS_LEFT_OPEN: Final = "streams_left_open"
    DUPLICATE_STREAM_START: Final = "duplicate_stream_start"
    TOO_MANY_STREAMS: Final = "too_many_streams"
    UNKNOWN_STREAM_END: Final = "unknown_stream_end"
    QUESTION_UNACKNOWLEDGED: Final = "question_unacknowledged"
    WARNINGS_DROPPED: Final = "warnings_dropped"


# code -> what it means (documentation, and the test that no code goes undocumented).
CODES: dict[str, str] = {
    WarningCode.REWRITE: "text or tool-call arguments were rewritten after an append-only client "
    "got them; the client gets the new text after a line break, or keeps the earlier arguments",
    WarningCode.AFTER_END: "a chunk arrived for a message (or stream) that had already ended; "
    "it was not sent",
    WarningCode.BAD_DELTA: "a structured delta that cannot apply to what the client holds was "
    "dropped",
    WarningCode.INCOMPLETE: "the stream ended without stream_end (or a final status): the wire "
    "ends it as not completed",
    WarningCode.LATE_TOOL_NAME: "a tool call ended before its name arrived (it was sent under the "
    "fallback name 'tool'), or its name changed after the client got the call",
    WarningCode.LATE_TOOL_ID: "a tool call's id changed after the client got the call; the wire "
    "keeps the first",
    WarningCode.DUPLICATE_TOOL_ID: "a tool call id was used before; the call was sent under a new "
    "id so the client does not merge two calls",
    WarningCode.UNKNOWN_ARTIFACT: "an A2A append for an artifact never created was dropped",
    WarningCode.FILE_BYTES: "an A2A file part with inline bytes was not decoded",
    WarningCode.AFTER_DONE: "data after an OpenAI [DONE] was ignored",
    WarningCode.LATE_FRAGMENT: "an OpenAI tool-call fragment continued a call that had ended; it "
    "starts a new tool_call message",
    WarningCode.OTHER_CHOICE: "an OpenAI choice other than 0 was ignored",
    WarningCode.DUPLICATE_CHUNK: "a chunk id seen before was ignored",
    WarningCode.UNKNOWN_MESSAGE: "a message_end named a message never seen",
    WarningCode.CHUNKS_LOST: "message_end reports more (or fewer) chunks than arrived; the "
    "message is incomplete",
    WarningCode.BAD_MESSAGE: "a peer's reply could not be read as Messages",
    WarningCode.BAD_INPUT: "a peer's ChatMessage could not be decoded; it was dropped",
    WarningCode.BAD_CARD: "a peer's interactive card that uagents-core refuses (unknown kind, "
    "bad payload, too deep) was ignored; the rest of its ChatMessage was kept",
    WarningCode.BAD_METADATA: "a ChatMessage's metadata group is unreadable; the group was ignored",
    WarningCode.DUPLICATE_CHAT_MESSAGE: "a ChatMessage msg_id seen before was dropped",
    WarningCode.LATE_CHAT_MESSAGE: "a ChatMessage arrived after its place in the order was given "
    "up",
    WarningCode.GAP: "ChatMessages of a conversation never arrived",
    WarningCode.STREAM_TIMEOUT: "a chat stream sent nothing for the idle timeout and was ended",
    WarningCode.MESSAGE_TOO_LARGE: "a message exceeds max_message_bytes; the rest was dropped",
    WarningCode.STREAM_TOO_LARGE: "a stream exceeds max_stream_bytes; the rest was dropped",
    WarningCode.STREAM_NOT_OPEN: "text for a chat stream that is not open was dropped",
    WarningCode.STREAMS_LEFT_OPEN: "chat streams were still open when the input ended",
    WarningCode.DUPLICATE_STREAM_START: "a start for a chat stream already open was ignored",
    WarningCode.TOO_MANY_STREAMS: "more chat streams than max_open_streams; the new one was "
    "refused",
    WarningCode.UNKNOWN_STREAM_END: "the end of a chat stream that is not open was ignored",
    WarningCode.QUESTION_UNACKNOWLEDGED: "a question went unacknowledged and unanswered through "
    "every resend; the reply ended lost (the agent stopped, or cannot find the asker to answer)",
    WarningCode.WARNINGS_DROPPED: "more warnings waited than the queue keeps; the oldest were "
    "dropped",
}
