"""A pydantic-ai ``Agent`` as a source (``pip install 'agent-stream[pydantic-ai]'``).

The agent runs with ``async with agent.run_stream_events(question, message_history=...)``.

Mapping:

- each model response (its parts, from the first ``PartStartEvent`` to the tool calls or the
  end) is a block ``llm`` labelled with the agent's name (else the model's);
- ``TextPart`` / ``TextPartDelta`` -> ``text``; ``ThinkingPart`` / ``ThinkingPartDelta`` ->
  ``thinking`` (a signature kept in ``props.metadata.signature``);
- ``ToolCallPart`` / ``ToolCallPartDelta`` -> ``tool_call`` (id and name first, arguments as
  deltas), one message per part, so parallel calls stay separate;
- ``FunctionToolResultEvent`` -> ``tool_result`` (``is_error`` unless its outcome is success or a
  retry prompt); output tool calls are the answer's structure and are shown as tool calls;
- a sub-agent run from a tool through :func:`run_sub_agent` -> a block ``agent`` (label and
  ``agent_name``: the sub-agent's name) nested under the model call that asked for the tool, its
  events streamed live inside it;
- a structured output (not a string) arrives as the output tool's call; its JSON is then also
  sent as the reply's ``text``, the answer a chat peer reads;
- the run's usage (``AgentRunResult.usage``: its model requests summed) is the reply's usage;
- deferred tool calls (a run whose output is ``DeferredToolRequests``: tools with
  ``requires_approval``, ``ApprovalRequired``, ``CallDeferred``) -> a ``user_input`` message per
  waiting call (see :mod:`.approvals`); the reply ends completed and the session's next message
  resumes the run with ``deferred_tool_results`` (a yes approves, anything else refuses with the
  text as the reason; a question's or an external call's result is the text).

History: ``request.history`` becomes ``message_history`` (``ModelRequest`` / ``ModelResponse``).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from agent_stream.errors import require as _require
from agent_stream.message import TEXT, THINKING
from agent_stream.message import text as _text
from agent_stream.sources.approvals import NOTHING_WAITS as _NOTHING_WAITS
from agent_stream.sources.approvals import PausedRuns as _PausedRuns
from agent_stream.sources.approvals import answer_of as _answer_of
from agent_stream.sources.approvals import asking as _asking
from agent_stream.sources.approvals import conversation_key as _conversation_key
from agent_stream.sources.approvals import is_yes as _is_yes
from agent_stream.sources.emitter import AGENT, LLM, SourceResponder
from agent_stream.sources.emitter import Emitter as _Emitter
from agent_stream.sources.emitter import drive as _drive
from agent_stream.sources.emitter import text_of as _text_of
from agent_stream.writer import Scope as _Scope

__all__ = ["AgentEvents", "history_of", "responder", "run_sub_agent"]


@dataclass
class _Run:
    em: _Emitter
    mapper: AgentEvents
    subs: list[int] = field(default_factory=lambda: [0])


_CURRENT: contextvars.ContextVar[_Run | None] = contextvars.ContextVar(
    "agent_stream_pydantic_ai_run", default=None
)


def _model_name(model: Any) -> str | None:
    """A model's name as OpenTelemetry's ``gen_ai.request.model`` wants it (no provider)."""
    if isinstance(model, str):
        return model.split(":", 1)[-1] or None
    name = getattr(model, "model_name", None)
    return str(name) if name else None


def _name(agent: Any) -> str | None:
    name = getattr(agent, "name", None)
    if name:
        return str(name)
    model = getattr(agent, "model", None)
    return getattr(model, "model_name", None) or (model if isinstance(model, str) else None)


class AgentEvents:
    """Maps one agent run's stream events into an :class:`Emitter`.

    Args:
        em: the emitter the run writes through.
        label: the label of its model blocks (None: none).
        parent: the key of the block it nests in (None: the reply's top level).
        model: the model's name, in its model blocks' start (None: not known).
    """

    def __init__(
        self,
        em: _Emitter,
        *,
        label: str | None,
        parent: Hashable | None = None,
        model: str | None = None,
    ) -> None:
        self.em = em
        self.label = label
        self.parent = parent
        self.model = model
        self.block: Hashable | None = None
        self.last_block_id: str | None = None
        self._n = 0
        self._last_index = -1

    async def _open(self) -> Hashable:
        if self.block is None:
            self._n += 1
            self.block = ("pydantic-ai", id(self), self._n)
            b = await self.em.open_block(
                self.block, LLM, self.label, parent=self.parent, data={"model": self.model}
            )
            self.last_block_id = b.block_id
            self._last_index = -1
        return self.block

    async def end_response(self) -> None:
        if self.block is not None:
            await self.em.close_block(self.block)
            self.block = None

    def _key(self, index: int) -> tuple[Any, ...]:
        return ("part", self.block, index)

    async def feed(self, ev: Any) -> Any:
        """Map one event; returns the run's result at its final event.

        Args:
            ev: the pydantic-ai stream event.
        """
        kind = getattr(ev, "event_kind", None)
        em = self.em
        if kind == "part_delta" and self.block is not None:  # nearly every event: straight on
            d = ev.delta
            if getattr(d, "part_delta_kind", None) == "text":
                h = em.messages.get(("part", self.block, ev.index))
                if h is not None and h.type == TEXT:
                    piece = d.content_delta
                    if piece and not (em.holding and h.hold(piece)):
                        await h.append(piece)
                    return None
        if kind == "part_start":
            if self.block is not None and ev.index <= self._last_index:
                await self.end_response()  # a new model response starts over at index 0
            block = await self._open()
            self._last_index = max(self._last_index, ev.index)
            await self._part(block, ev.index, ev.part)
        elif kind == "part_delta":
            block = await self._open()
            await self._delta(block, ev.index, ev.delta)
        elif kind == "part_end":
            # not final: a delta for an ended part may still follow (interleaved tool calls),
            # so the part's message ends with its model response
            return None
        elif kind in ("function_tool_call", "output_tool_call"):
            await self.end_response()
        elif kind in ("function_tool_result", "output_tool_result"):
            await self.end_response()
            part = ev.part
            outcome = getattr(part, "outcome", "success")
            retry = getattr(part, "part_kind", "") == "retry-prompt"
            content = getattr(ev, "content", None) or getattr(part, "content", None)
            await em.tool_result(
                self.parent,
                getattr(part, "tool_call_id", None),
                getattr(part, "tool_name", None),
                content,
                is_error=retry or outcome not in ("success", None),
            )
        elif kind == "agent_run_result":
            await self.end_response()
            return ev.result
        elif kind in ("final_result", "deferred_tool_requests", "deferred_tool_results"):
            # calls left waiting are the run's output (asked at its end); calls a handler
            # answered go on to their tool results
            return None
        else:
            em.warn(
                f"pydantic-ai event {kind or type(ev).__name__!r}",
                "an event this source does not map",
            )
        return None

    async def _part(self, block: Hashable, index: int, part: Any) -> None:
        em, key = self.em, self._key(index)
        await em.end_message(key)  # a new start at the same index replaces the part
        pk = getattr(part, "part_kind", None)
        if pk == "text":
            await em.open(key, TEXT, block)
            await em.append(key, TEXT, block, part.content)
        elif pk == "thinking":
            await em.open(key, THINKING, block)
            await em.append(key, THINKING, block, part.content)
            if getattr(part, "signature", None):
                await em.messages[key].merge({"metadata": {"signature": part.signature}})
        elif pk in ("tool-call", "builtin-tool-call"):
            await em.tool_call(key, block, part.tool_call_id, part.tool_name, _args(part.args))
        else:
            em.warn(f"pydantic-ai part {pk!r}", "a response part this source does not map")

    async def _delta(self, block: Hashable, index: int, d: Any) -> None:
        em, key = self.em, self._key(index)
        dk = getattr(d, "part_delta_kind", None)
        if dk == "text":
            await em.append(key, TEXT, block, d.content_delta or "")
        elif dk == "thinking":
            await em.append(key, THINKING, block, d.content_delta or "")
            if d.signature_delta:
                h = await em.open(key, THINKING, block)
                await h.merge({"metadata": {"signature": d.signature_delta}})
        elif dk == "tool_call":
            if not em.has(key):
                await em.tool_call(key, block, d.tool_call_id, d.tool_name_delta)
            await em.tool_args(key, _args(d.args_delta))
        else:
            em.warn(f"pydantic-ai delta {dk!r}", "a part delta this source does not map")


def _args(args: Any) -> str:
    if args is None:
        return ""
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def _is_deferred(output: Any) -> bool:
    from pydantic_ai import DeferredToolRequests

    return isinstance(output, DeferredToolRequests)


async def _ask(em: _Emitter, requests: Any) -> None:
    """A ``user_input`` message per call the run left waiting."""
    for call in requests.approvals:
        await em.send(None, _asking(call.tool_call_id, call.tool_name, call.args or {}))
    for call in requests.calls:
        kind = requests.kind(call.tool_call_id) if hasattr(requests, "kind") else "external"
        await em.send(None, _asking(call.tool_call_id, call.tool_name, call.args or {}, kind))


def _answers(requests: Any, text: str) -> Any:
    """The asker's answer as the waiting calls' ``DeferredToolResults``."""
    from pydantic_ai import DeferredToolResults, ToolApproved, ToolDenied

    approve = _is_yes(text)
    return DeferredToolResults(
        approvals={
            c.tool_call_id: ToolApproved() if approve else ToolDenied(f"The user refused: {text}")
            for c in requests.approvals
        },
        calls={c.tool_call_id: text for c in requests.calls},
    )


def history_of(request: Any) -> list[Any]:
    """``request.history`` as pydantic-ai ``message_history``.

    Args:
        request: the request (its ``history``).
    """
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        UserPromptPart,
    )

    out: list[Any] = []
    for turn in getattr(request, "history", ()) or ():
        if turn.role == "assistant":
            out.append(ModelResponse(parts=[TextPart(turn.text)]))
        elif turn.role == "system":
            out.append(ModelRequest(parts=[SystemPromptPart(turn.text)]))
        else:
            out.append(ModelRequest(parts=[UserPromptPart(turn.text)]))
    return out


async def _stream(agent: Any, mapper: AgentEvents, prompt: Any, kwargs: dict[str, Any]) -> Any:
    result = None
    async with agent.run_stream_events(prompt, **kwargs) as events:
        async for ev in mapper.em.events(events):
            r = await mapper.feed(ev)
            if r is not None:
                result = r
    return result


async def run_sub_agent(agent: Any, prompt: Any, **kwargs: Any) -> Any:
    """Run a sub-agent from a tool: inside a run streamed by :func:`responder`, its events
    stream live into a block ``agent`` nested under the model call that asked for the tool;
    elsewhere it is ``await agent.run(prompt, **kwargs)``. Returns the ``AgentRunResult``.

    Its usage is added to the reply's unless ``usage=`` shares the caller's (then the caller's
    final usage already counts it).

    Args:
        agent: the pydantic-ai sub-agent.
        prompt: its prompt.
        **kwargs: more ``agent.run`` options (``deps``, ``usage``...).
    """
    run = _CURRENT.get()
    if run is None:
        return await agent.run(prompt, **kwargs)
    em = run.em
    run.subs[0] += 1
    name = _name(agent) or "agent"
    key = ("pydantic-ai-sub", id(run), run.subs[0])
    await em.open_block(
        key,
        AGENT,
        name,
        parent=run.mapper.parent,
        parent_id=run.mapper.last_block_id,
        data={"agent_name": name},
    )
    mapper = AgentEvents(
        em,
        label=_name(agent),
        parent=key,
        model=_model_name(kwargs.get("model") or getattr(agent, "model", None)),
    )
    token = _CURRENT.set(_Run(em, mapper, run.subs))
    status = "completed"
    try:
        result = await _stream(agent, mapper, prompt, kwargs)
    except BaseException as exc:
        status = "cancelled" if isinstance(exc, asyncio.CancelledError) else "error"
        raise
    finally:
        _CURRENT.reset(token)
        await mapper.end_response()
        await em.close_block(key, status)
    if "usage" not in kwargs and result is not None:
        _add_usage(em, result)
    return result


def _add_usage(em: _Emitter, result: Any) -> None:
    u = result.usage  # a property (a method in older releases)
    if callable(u) and not hasattr(u, "input_tokens"):
        u = u()
    em.add_usage(u.input_tokens, u.output_tokens)


def responder(
    agent: Any, *, label: str | None = None, deps: Any = None, **run_options: Any
) -> SourceResponder:
    """A responder for ``StreamingChat`` streaming a pydantic-ai agent's runs.

    Args:
        agent: the ``pydantic_ai.Agent``.
        label: the ``llm`` blocks' label (default: the agent's name, else its model's).
        deps: the run's dependencies.
        **run_options: more ``run_stream_events`` options (``model``, ``model_settings``...).
    """
    _require("pydantic_ai", "pydantic-ai", "the pydantic-ai source")

    paused: _PausedRuns[tuple[list[Any], Any]] = _PausedRuns()

    async def respond(request: Any, out: _Scope) -> None:
        em = _Emitter(out)
        mapper = AgentEvents(
            em,
            label=label or _name(agent),
            model=_model_name(run_options.get("model") or getattr(agent, "model", None)),
        )
        conversation = _conversation_key(request)  # (sender, session): never the session alone

        async def run() -> None:
            token = _CURRENT.set(_Run(em, mapper))
            waiting = paused.take(conversation)
            answer = _answer_of(request, waiting is not None)
            if answer is None:  # a card's answer, and nothing waits for one here
                _CURRENT.reset(token)
                await em.out.send(_text(_NOTHING_WAITS))
                return
            prompt: str | None = str(request.text)
            kwargs: dict[str, Any] = {
                "message_history": history_of(request) or None,
                "deps": deps,
                **run_options,
            }
            if waiting is not None:  # this message answers the calls the last run left waiting
                kwargs["message_history"] = waiting[0]
                kwargs["deferred_tool_results"] = _answers(waiting[1], answer)
                prompt = None
            try:
                result = await _stream(agent, mapper, prompt, kwargs)
            finally:
                _CURRENT.reset(token)
            if result is not None:
                _add_usage(em, result)
                output = getattr(result, "output", None)
                if _is_deferred(output):
                    await _ask(em, output)
                    if conversation is not None:
                        paused.put(conversation, (result.all_messages(), output))
                    else:
                        em.warn(
                            "pydantic-ai deferred tool calls",
                            "the request has no chat session for an answer to resume them in",
                        )
                elif output is not None and not isinstance(output, str):
                    # structured output came as the output tool's arguments: the answer a
                    # chat peer reads is its JSON
                    await em.out.send(_text(json.dumps(_text_of(output), ensure_ascii=False)))

        await _drive(em, run)

    return respond
