"""One exception hierarchy for everything agent_stream rejects, and warnings it reports."""

from __future__ import annotations

from dataclasses import dataclass


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


class UsageError(StreamError):
    """A command-line option or argument is wrong."""


class MissingDependency(StreamError, ImportError):
    """An optional extra is not installed (the message names the pip command)."""


def require(module: str, extra: str, what: str) -> None:
    """Raise MissingDependency unless ``module`` can be imported."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingDependency(
            f"{what} needs the {module!r} package: pip install 'agent-stream[{extra}]'")


class LimitExceeded(StreamError):
    """A configured limit (streams, bytes, idle time) was exceeded."""


@dataclass(frozen=True)
class StreamWarning:
    """Something was wrong but the stream goes on (lost chunks, duplicates, unknown ids)."""

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
