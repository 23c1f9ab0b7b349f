"""Model sources: where a streaming agent's words come from.

A model source is an async callable ``(question: str, out: Scope) -> None`` that writes its reply
into a :class:`~agent_stream.writer.StreamWriter` (or any scope of one): blocks, threads, messages.
A source that also takes a keyword ``history`` (the conversation's earlier turns, a sequence of
:class:`~agent_stream.conversation.Turn`, oldest first) is given it by ``agent-stream serve``;
both bundled sources take it.

- :class:`~agent_stream.sources.replay.ReplayModel` (``replay``, the default): bundled replies
  streamed at a realistic token rate; no key, no network. A stand-in for a model.
- :class:`~agent_stream.sources.openai.OpenAIModel` (``openai``): any OpenAI-compatible
  chat-completions server (needs the ``openai`` extra).

:func:`~agent_stream.sources.detect.responder_for` turns an agent built on a framework (LangGraph,
pydantic-ai, the OpenAI Agents SDK, or a callable returning a raw model stream) into a responder
for ``StreamingChat``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agent_stream.writer import Scope as _Scope

if TYPE_CHECKING:
    from agent_stream.sources.detect import responder_for
    from agent_stream.sources.openai import OpenAIModel
    from agent_stream.sources.replay import ReplayModel

# Called as (question, out); a source that accepts it also gets history=turns (keyword).
ModelSource = Callable[[str, _Scope], Awaitable[None]]

__all__ = ["ModelSource", "OpenAIModel", "ReplayModel", "make_source", "responder_for"]


def __getattr__(name: str) -> Any:
    # Imported when asked for: OpenAIModel needs the optional ``openai`` package.
    if name == "ReplayModel":
        from agent_stream.sources.replay import ReplayModel

        return ReplayModel
    if name == "OpenAIModel":
        from agent_stream.sources.openai import OpenAIModel

        return OpenAIModel
    if name == "responder_for":
        from agent_stream.sources.detect import responder_for

        return responder_for
    raise AttributeError(f"module 'agent_stream.sources' has no attribute {name!r}")


def make_source(name: str, **options: Any) -> ModelSource:
    """A model source by name; the openai module is imported only when asked for.

    Args:
        name: ``replay`` or ``openai``.
        **options: the source's options (replay: ``rate``, ...; openai: ``base_url``,
            ``api_key``, ``model``, ...).

    Raises:
        ValueError: an unknown name.
    """
    if name == "replay":
        from agent_stream.sources.replay import ReplayModel

        return ReplayModel(**options)
    if name == "openai":
        from agent_stream.sources.openai import OpenAIModel

        return OpenAIModel(**options)
    raise ValueError(f"unknown model source {name!r} (expected 'replay' or 'openai')")
