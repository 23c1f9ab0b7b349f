"""An OpenAI Agents SDK ``Agent`` as a source (``pip install 'agent-stream[openai-agents]'``).

The agent runs with ``Runner.run_streamed(agent, input).stream_events()``.

Mapping:

- the raw model events (``RawResponsesStreamEvent``: Responses events, also for chat-completions
  models, which the SDK converts) go through the Responses mapper
  (:mod:`.openai_responses`): each model call a block ``llm`` labelled with the running agent's
  name (``model``: the model's), reasoning ``thinking``, text ``text``, function calls
  ``tool_call`` with streamed arguments;
- ``tool_output`` items -> ``tool_result``; ``handoff_occured`` -> the handoff call's
  ``tool_result`` (the target agent's name);
- a handoff (``AgentUpdatedStreamEvent`` after the first) -> a block ``agent`` (label and
  ``agent_name``: the new agent) nested under the model call that handed off; the new agent's
  model calls nest inside it;
- an agent used as a tool (``Agent.as_tool(..., on_stream=nested_events)``) -> a block ``agent``
  nested under the model call that called the tool, the nested run's events streamed live in
  it, ended before the tool's result;
- usage: each ``response.completed``'s usage, summed (the run's ``context_wrapper.usage``);
- tool calls waiting for approval (tools with ``needs_approval``: the run's ``interruptions``)
  -> a ``user_input`` message per call (see :mod:`.approvals`); the reply ends completed and the
  session's next message resumes the run from its ``RunState`` (a yes approves, anything else
  rejects with the text as the reason).
- other run items (message, tool call, reasoning created) repeat what the raw events streamed.

History: ``request.history`` becomes the input list (``{"role", "content"}`` items) before the
question. Cancelling the reply cancels the run (``RunResultStreaming.cancel()``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Hashable
from typing import Any

from agent_stream.errors import require as _require
from agent_stream.message import text as _text
from agent_stream.sources.approvals import NOTHING_WAITS as _NOTHING_WAITS
from agent_stream.sources.approvals import PausedRuns as _PausedRuns
from agent_stream.sources.approvals import answer_of as _answer_of
from agent_stream.sources.approvals import asking as _asking
from agent_stream.sources.approvals import conversation_key as _conversation_key
from agent_stream.sources.approvals import is_yes as _is_yes
from agent_stream.sources.emitter import AGENT, SourceResponder
from agent_stream.sources.emitter import Emitter as _Emitter
from agent_stream.sources.emitter import drive as _drive
from agent_stream.sources.emitter import field as _field
from agent_stream.sources.openai_responses import ResponsesStream as _ResponsesStream
from agent_stream.writer import Scope as _Scope

__all__ = ["AgentRun", "agent_tools_of", "input_of", "nested_events", "responder"]

# Items that only repeat what the raw model events already streamed.
_REPEATS = frozenset(
    {
        "message_output_created",
        "tool_called",
        "reasoning_item_created",
        "handoff_requested",
        "tool_search_called",
        "mcp_list_tools",
    }
)

_CURRENT: contextvars.ContextVar[AgentRun | None] = contextvars.ContextVar(
    "agent_stream_openai_agents_run", default=None
)


def _label(agent: Any) -> str | None:
    name = getattr(agent, "name", None)
    return str(name) if name else None


class AgentRun:
    """Maps one run's stream events (a top-level run, or a nested agent-as-tool run).

    Args:
        em: the emitter the run writes through.
        parent: the key of the block it nests in (None: the reply's top level).
        label: the label of its blocks (None: the agent's name).
    """

    def __init__(
        self, em: _Emitter, *, parent: Hashable | None = None, label: str | None = None
    ) -> None:
        self.em = em
        self.root_parent = parent
        self.parent = parent
        self.label = label
        self.responses = _ResponsesStream(em, label=label, parent=parent)
        self.agents = 0
        self.nested: dict[str, tuple[Hashable, AgentRun]] = {}
        self.agent_tools: frozenset[str] = frozenset()  # agents used as tools, by tool name
        self._last_llm: str | None = None

    def fast(self, ev: Any) -> bool:
        """Hold a raw text delta without a coroutine; False: ``feed`` the event.

        Args:
            ev: the stream event.
        """
        return _field(ev, "type") == "raw_response_event" and self.responses.fast(ev.data)

    async def feed(self, ev: Any) -> None:
        """Map one event of the run's stream.

        Args:
            ev: the Agents SDK stream event.
        """
        t = _field(ev, "type")
        if t == "raw_response_event":
            await self.responses.feed(ev.data)
            if self.responses.block is not None:
                self._last_llm = self.em.block_id(self.responses.block)
        elif t == "agent_updated_stream_event":
            await self._agent(ev.new_agent)
        elif t == "run_item_stream_event":
            await self._item(ev.name, ev.item)
        else:
            self.em.warn(f"openai-agents event {t!r}", "an event this source does not know")

    async def _agent(self, agent: Any) -> None:
        self.agents += 1
        name = _label(agent)
        if self.agents == 1:  # the starting agent: its blocks are the reply's own
            self.label = self.label or name
            self.responses.label = self.label
            return
        await self.responses.close()
        key = ("openai-agents-handoff", id(self), self.agents)
        await self.em.open_block(
            key,
            AGENT,
            name,
            parent=self.parent,
            parent_id=self._last_llm,
            data={"agent_name": name},
        )
        self.parent = key
        self.responses = _ResponsesStream(self.em, label=name, parent=key)

    async def _item(self, name: str, item: Any) -> None:
        em = self.em
        raw = getattr(item, "raw_item", None)
        if name == "tool_output":
            call_id = _field(raw, "call_id")
            tool = em.tool_names.get(call_id or "")
            if call_id not in self.nested and tool in self.agent_tools:
                em.warn(
                    f"openai-agents agent tool {tool!r}",
                    "its nested run streamed nothing "
                    "here: give it as_tool(..., on_stream=nested_events)",
                )
            await self.end_nested(call_id)
            await em.tool_result(self.parent, call_id, None, getattr(item, "output", None))
        elif name == "handoff_occured":
            target = _label(getattr(item, "target_agent", None))
            await em.tool_result(
                self.parent, _field(raw, "call_id"), None, _field(raw, "output") or target
            )
        elif name in _REPEATS:
            return
        else:
            em.warn(f"openai-agents item {name!r}", "a run item this source does not map")

    async def nested_event(self, agent: Any, call_id: str | None, ev: Any) -> None:
        """One event of an agent run as a tool (see :func:`nested_events`).

        Args:
            agent: the nested agent.
            call_id: the id of the tool call that runs it (None: unknown).
            ev: its stream event.
        """
        key = call_id or f"anon-{id(agent)}"
        entry = self.nested.get(key)
        if entry is None:
            name = _label(agent)
            bkey = ("openai-agents-tool", id(self), key)
            await self.em.open_block(
                bkey,
                AGENT,
                name,
                parent=self.parent,
                parent_id=self.em.call_blocks.get(key),
                data={"agent_name": name},
            )
            entry = (bkey, AgentRun(self.em, parent=bkey, label=name))
            self.nested[key] = entry
        await entry[1].feed(ev)

    async def end_nested(self, call_id: str | None) -> None:
        """End the block of the agent run as the tool call ``call_id``.

        Args:
            call_id: the tool call's id (None or unknown: nothing happens).
        """
        entry = self.nested.pop(call_id or "", None)
        if entry is not None:
            await entry[1].close()
            await self.em.close_block(entry[0])

    async def close(self) -> None:
        for key in list(self.nested):
            await self.end_nested(key)
        await self.responses.close()


async def nested_events(event: Any) -> None:
    """``Agent.as_tool(..., on_stream=nested_events)``: the nested agent's events stream live
    into the reply as a block ``agent`` (outside a run streamed by :func:`responder`, a no-op).

    Args:
        event: the ``on_stream`` event (the nested agent, its tool call and the stream event).
    """
    run = _CURRENT.get()
    if run is None:
        return
    call = _field(event, "tool_call")
    await run.nested_event(_field(event, "agent"), _field(call, "call_id"), _field(event, "event"))


def agent_tools_of(agent: Any) -> frozenset[str]:
    """The names of the tools made with ``Agent.as_tool`` reachable from ``agent`` (its tools,
    its handoffs' agents, theirs).

    Args:
        agent: the Agents SDK agent.
    """
    names: set[str] = set()
    seen: set[int] = set()
    todo = [agent]
    while todo:
        a = todo.pop()
        if id(a) in seen:
            continue
        seen.add(id(a))
        for tool in getattr(a, "tools", None) or ():
            if getattr(tool, "_is_agent_tool", False):
                names.add(str(getattr(tool, "name", "")))
                todo.append(getattr(tool, "_agent_instance", None))
        for h in getattr(a, "handoffs", None) or ():
            todo.append(getattr(h, "agent", h) if not hasattr(h, "tools") else h)
    return frozenset(names)


def input_of(request: Any) -> list[dict[str, str]]:
    """``request.history`` and the question as an Agents SDK input list.

    Args:
        request: the request (its ``text`` and ``history``).
    """
    items = [{"role": t.role, "content": t.text} for t in getattr(request, "history", ()) or ()]
    items.append({"role": "user", "content": str(request.text)})
    return items


def _answer(state: Any, waiting: list[Any], text: str) -> Any:
    """The paused run's state with the asker's answer to each waiting call."""
    for item in waiting:
        if _is_yes(text):
            state.approve(item)
        else:
            state.reject(item, rejection_message=f"The user refused: {text}")
    return state


def responder(
    agent: Any,
    *,
    context: Any = None,
    max_turns: int | None = None,
    run_config: Any = None,
    label: str | None = None,
) -> SourceResponder:
    """A responder for ``StreamingChat`` streaming an OpenAI Agents SDK agent's runs.

    Args:
        agent: the starting ``agents.Agent``.
        context: the run context given to tools and hooks.
        max_turns: the run's turn limit (the SDK's default when None).
        run_config: an ``agents.RunConfig``.
        label: the starting agent's ``llm`` blocks' label (default: its name).
    """
    _require("agents", "openai-agents", "the OpenAI Agents SDK source")

    paused: _PausedRuns[tuple[Any, list[Any]]] = _PausedRuns()

    async def respond(request: Any, out: _Scope) -> None:
        from agents import Runner

        conversation = _conversation_key(request)  # (sender, session): never the session alone
        em = _Emitter(out)
        mapper = AgentRun(em, label=label)
        mapper.agent_tools = agent_tools_of(agent)
        kw: dict[str, Any] = {"context": context, "run_config": run_config}
        if max_turns is not None:
            kw["max_turns"] = max_turns

        async def run() -> None:
            token = _CURRENT.set(mapper)
            try:
                waiting = paused.take(conversation)
                answer = _answer_of(request, waiting is not None)
                items: Any = input_of(request)
                if waiting is not None and answer is not None:  # it answers the calls waiting
                    items = _answer(*waiting, answer)
                result = None if answer is None else Runner.run_streamed(agent, items, **kw)
            finally:
                _CURRENT.reset(token)
            if result is None:  # a card's answer, and nothing waits for one here
                await em.out.send(_text(_NOTHING_WAITS))
                return
            try:
                async for ev in em.events(result.stream_events()):
                    if not mapper.fast(ev):
                        await mapper.feed(ev)
            except BaseException:
                result.cancel()
                raise
            await mapper.close()
            interruptions = list(getattr(result, "interruptions", None) or ())
            for item in interruptions:
                raw = getattr(item, "raw_item", None)
                await em.send(
                    None,
                    _asking(
                        _field(raw, "call_id"),
                        getattr(item, "tool_name", None) or _field(raw, "name"),
                        _field(raw, "arguments") or {},
                    ),
                )
            if interruptions:
                if conversation is not None:
                    paused.put(conversation, (result.to_state(), interruptions))
                else:
                    em.warn(
                        "openai-agents tool approvals",
                        "the request has no chat session for an answer to resume the run in",
                    )

        await _drive(em, run)

    return respond
