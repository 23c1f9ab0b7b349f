"""``responder_for(app)``: a responder for ``StreamingChat`` from whatever agent ``app`` is.

Told apart without importing a framework that is not already loaded (an app of that framework
has loaded it): a LangGraph compiled graph, a pydantic-ai ``Agent``, an OpenAI Agents SDK
``Agent``, or a callable ``(request) -> stream`` of raw model events (:mod:`.streams`).
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from agent_stream.sources.emitter import SourceResponder

__all__ = ["KINDS", "kind_of_app", "responder_for"]

KINDS = ("langgraph", "pydantic-ai", "openai-agents", "callable")


def _isinstance(app: Any, module: str, name: str) -> bool:
    mod = sys.modules.get(module)
    cls = getattr(mod, name, None) if mod is not None else None
    return isinstance(cls, type) and isinstance(app, cls)


def kind_of_app(app: Any) -> str | None:
    """``langgraph``, ``pydantic-ai``, ``openai-agents``, ``responder`` (a responder of its own,
    ``async (request, out)``), ``callable`` (``(request) -> stream``) or None.

    Args:
        app: the framework object (a graph, an agent) or a callable.
    """
    if _isinstance(app, "langgraph.pregel", "Pregel") or (
        _isinstance(app, "langgraph.pregel.main", "Pregel")
    ):
        return "langgraph"
    if _isinstance(app, "pydantic_ai.agent", "AbstractAgent") or (
        _isinstance(app, "pydantic_ai", "Agent")
    ):
        return "pydantic-ai"
    if _isinstance(app, "agents.agent", "Agent") or _isinstance(app, "agents", "Agent"):
        return "openai-agents"
    if callable(app) and not inspect.isclass(app):
        return "responder" if _takes_two(app) else "callable"
    return None


def _takes_two(fn: Any) -> bool:
    """Whether ``fn`` is a coroutine function taking (request, out): a responder as it is."""
    method = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    if not (inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(method)):
        return False
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) == 2


def responder_for(app: Any, **options: Any) -> SourceResponder:
    """A responder ``(request, out)`` for ``StreamingChat(...)`` streaming ``app``'s run.

    Args:
        app: a LangGraph compiled graph, a pydantic-ai ``Agent``, an OpenAI Agents SDK
            ``Agent``, a callable ``(request) -> stream`` returning (an awaitable of) an
            async iterable of Anthropic, OpenAI Responses, chat-completion or LiteLLM events,
            or a responder of its own (``async def respond(request, out)``), served as it is.
        **options: the options of that framework's ``responder`` (see its module).

    Raises:
        TypeError: ``app`` is none of these (the message names what it got).
    """
    kind = kind_of_app(app)
    if kind == "langgraph":
        from agent_stream.sources.langgraph import responder as lg

        return lg(app, **options)
    if kind == "pydantic-ai":
        from agent_stream.sources.pydantic_ai import responder as pa

        return pa(app, **options)
    if kind == "openai-agents":
        from agent_stream.sources.openai_agents import responder as oa

        return oa(app, **options)
    if kind == "responder":  # the author's own: cards, blocks, threads, written by hand
        responder: SourceResponder = app
        return responder
    if kind == "callable":
        from agent_stream.sources.streams import responder as st

        return st(app, **options)
    raise TypeError(
        f"responder_for: {describe(app)} is none of a LangGraph compiled graph, a pydantic-ai "
        "Agent, an OpenAI Agents SDK Agent or a callable (request) -> model stream"
    )


def describe(app: Any) -> str:
    """``a <module>.<type>`` (``the class X`` for a class): what an app was found to be.

    Args:
        app: the object.
    """
    if inspect.isclass(app):
        return f"the class {app.__module__}.{app.__qualname__}"
    t = type(app)
    return (
        f"a {t.__module__}.{t.__qualname__}"
        if t.__module__ != "builtins"
        else f"a {t.__qualname__} ({app!r:.60})"
    )
