"""A LangGraph compiled graph as a source (``pip install 'agent-stream[langgraph]'``).

The graph runs with ``astream(input, config, stream_mode=["messages", "updates", "custom"],
subgraphs=True)``: each item is ``(namespace, mode, data)``. That choice (rather than
``astream_events``) keeps the model's own chunks (text, reasoning, ``tool_call_chunks``), the
nodes' updates (where interrupts appear) and the custom writer in one ordered stream, without
the callback tree of every runnable.

Mapping:

- each model call (the chunks of one message id in one namespace) is a block ``llm`` labelled with
  its node's name (``model``: the model's name when LangChain reports it);
- text content -> ``text``; reasoning (``reasoning``/``thinking`` content blocks,
  ``additional_kwargs.reasoning_content``) -> ``thinking``;
- each ``tool_call_chunks`` index -> a ``tool_call`` message (id and name, then the arguments as
  deltas); a whole ``AIMessage``'s ``tool_calls`` -> whole tool calls;
- a ``ToolMessage`` -> ``tool_result`` (``is_error`` when its status is error);
- a subgraph (a namespace) -> a block ``agent`` whose label and ``agent_name`` are the node that
  runs it, nested under the enclosing subgraph's block, ended when that node's update arrives;
- the custom stream writer -> a ``loading`` line (a string, or a mapping's ``progress`` /
  ``message`` / ``status``), other values an ``event`` message ``custom``;
- ``interrupt(value)`` -> a ``user_input`` message carrying the value; the reply ends
  completed and the next message of the same session resumes the run with
  ``Command(resume=<its text>)`` (the graph needs a checkpointer; ``thread_id`` is a hash of the
  asker's address and the session, so another sender reusing the session id gets a thread of
  its own);
- ``usage_metadata`` of every chunk/message, summed, is the reply's usage.

History: with a checkpointer and a session, the thread's own state is the memory (only the new
question is sent, or the resume); otherwise ``request.history`` becomes the messages state.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from agent_stream.errors import require as _require
from agent_stream.message import TEXT, THINKING
from agent_stream.message import event as _event
from agent_stream.message import text as _text
from agent_stream.message import user_input as _user_input
from agent_stream.sources.approvals import NOTHING_WAITS as _NOTHING_WAITS
from agent_stream.sources.approvals import answer_of as _answer_of
from agent_stream.sources.approvals import question_card as _question_card
from agent_stream.sources.approvals import thread_id as _thread_id
from agent_stream.sources.emitter import AGENT, LLM, SourceResponder
from agent_stream.sources.emitter import Emitter as _Emitter
from agent_stream.sources.emitter import drive as _drive
from agent_stream.sources.emitter import text_of as _text_of
from agent_stream.writer import Scope as _Scope

__all__ = ["GraphStream", "build_input", "responder"]

MODES = ["messages", "updates", "custom"]


def _node(ns_part: str) -> str:
    return ns_part.split(":", 1)[0]


class GraphStream:
    """Maps ``astream(..., subgraphs=True)`` items into an :class:`Emitter`.

    Args:
        em: the emitter the graph's run writes through.
        label: the label of the model's blocks (None: the node's name).
    """

    def __init__(self, em: _Emitter, *, label: str | None = None) -> None:
        self.em = em
        self.label = label
        self.current: dict[tuple[str, ...], Hashable] = {}  # namespace -> its open llm block
        self.interrupted: list[Any] = []

    async def agent_block(self, ns: tuple[str, ...]) -> Hashable | None:
        """The agent block of namespace ``ns`` (opened, with its parents, when first seen).

        Args:
            ns: the subgraph namespace (empty: the top level, no block).
        """
        if not ns:
            return None
        key = ("ns", ns)
        if key not in self.em.blocks:
            parent = await self.agent_block(ns[:-1])
            name = _node(ns[-1])
            await self.em.open_block(key, AGENT, name, parent=parent, data={"agent_name": name})
        return key

    def fast(self, ns: tuple[str, ...], mode: str, data: Any) -> bool:
        """Hold a plain text token of the open model call without a coroutine; False: ``feed``
        the item.

        Args:
            ns: the subgraph namespace it comes from.
            mode: the stream mode.
            data: the item's payload.
        """
        if not self.em.holding or mode != "messages":
            return False
        msg = data[0]
        if type(msg).__name__ != "AIMessageChunk":
            return False
        content = msg.content
        if (
            type(content) is not str
            or msg.tool_call_chunks
            or msg.usage_metadata
            or msg.additional_kwargs
            or msg.chunk_position is not None
        ):
            return False
        ns = tuple(ns)
        key = ("llm", ns, msg.id or "?")
        if self.current.get(ns) != key:
            return False
        h = self.em.messages.get((key, TEXT))
        return h is not None and (not content or h.hold(content))

    async def feed(self, ns: tuple[str, ...], mode: str, data: Any) -> None:
        """Map one item of the stream.

        Args:
            ns: the subgraph namespace it comes from.
            mode: the stream mode (``messages``, ``updates``, ...).
            data: the item's payload.
        """
        if mode == "messages":
            msg, meta = data
            await self._message(tuple(ns), msg, meta if isinstance(meta, Mapping) else {})
        elif mode == "updates":
            await self._updates(tuple(ns), data)
        elif mode == "custom":
            await self._custom(tuple(ns), data)
        else:
            self.em.warn(f"langgraph mode {mode!r}", "a stream mode this source did not ask for")

    async def _end_llm(self, ns: tuple[str, ...]) -> None:
        key = self.current.pop(ns, None)
        if key is not None:
            await self.em.close_block(key)

    async def _message(self, ns: tuple[str, ...], msg: Any, meta: Mapping[str, Any]) -> None:
        em = self.em
        kind = type(msg).__name__
        if kind == "AIMessageChunk":  # a plain text token of the open model call: straight on
            content = msg.content
            if (
                type(content) is str
                and not msg.tool_call_chunks
                and not msg.usage_metadata
                and not msg.additional_kwargs
                and msg.chunk_position is None
            ):
                key = ("llm", ns, msg.id or "?")
                h = em.messages.get((key, TEXT)) if self.current.get(ns) == key else None
                if h is not None:
                    if content and not (em.holding and h.hold(content)):
                        await h.append(content)
                    return
        parent = await self.agent_block(ns)
        if kind in ("ToolMessage", "ToolMessageChunk"):
            await self._end_llm(ns)
            await em.tool_result(
                parent,
                getattr(msg, "tool_call_id", None),
                getattr(msg, "name", None),
                msg.content,
                is_error=getattr(msg, "status", None) == "error",
            )
            return
        if kind not in ("AIMessage", "AIMessageChunk"):
            em.warn(f"langgraph {kind}", "a message a node returned that is not a model's")
            return
        mid = msg.id or "?"
        key = ("llm", ns, mid)
        if self.current.get(ns) != key:
            await self._end_llm(ns)
            node = str(meta.get("langgraph_node") or "")
            await em.open_block(
                key,
                LLM,
                self.label or node or meta.get("ls_model_name"),
                parent=parent,
                data={"model": meta.get("ls_model_name")},
            )
            self.current[ns] = key
        await self._content(key, msg)
        for tc in getattr(msg, "tool_call_chunks", None) or []:
            tkey = ("tc", key, tc.get("index") if tc.get("index") is not None else tc.get("id"))
            if em.has(tkey):
                await em.tool_args(tkey, tc.get("args") or "")
            else:
                await em.tool_call(tkey, key, tc.get("id"), tc.get("name"), tc.get("args") or "")
        if kind == "AIMessage":
            for i, tc in enumerate(getattr(msg, "tool_calls", None) or []):
                await em.tool_call(
                    ("tc", key, i),
                    key,
                    tc.get("id"),
                    tc.get("name"),
                    json.dumps(tc.get("args") or {}, ensure_ascii=False),
                )
        usage = getattr(msg, "usage_metadata", None)
        if usage:
            em.add_usage(
                usage.get("input_tokens"), usage.get("output_tokens"), usage.get("total_tokens")
            )
        if kind == "AIMessage" or getattr(msg, "chunk_position", None) == "last":
            await self._end_llm(ns)

    async def _content(self, key: Hashable, msg: Any) -> None:
        em = self.em
        reasoning = (getattr(msg, "additional_kwargs", None) or {}).get("reasoning_content")
        if isinstance(reasoning, str):
            await em.append((key, THINKING), THINKING, key, reasoning)
        content = msg.content
        if isinstance(content, str):
            await em.append((key, TEXT), TEXT, key, content)
            return
        for part in content or []:
            if isinstance(part, str):
                await em.append((key, TEXT), TEXT, key, part)
                continue
            t = part.get("type")
            if t == "text":
                await em.append((key, TEXT), TEXT, key, part.get("text") or "")
            elif t in ("thinking", "reasoning"):
                await em.append(
                    (key, THINKING), THINKING, key, part.get(t) or part.get("text") or ""
                )
                sig = part.get("signature")
                if sig:
                    h = await em.open((key, THINKING), THINKING, key)
                    await h.merge({"metadata": {"signature": sig}})
            elif t not in (
                "tool_use",
                "tool_call_chunk",
                "tool_call",
                "input_json_delta",
                "function_call",
            ):
                em.warn(
                    f"langgraph content block {t!r}", "a content block this source does not map"
                )

    async def _updates(self, ns: tuple[str, ...], data: Any) -> None:
        if not isinstance(data, Mapping):
            return
        for node, _ in data.items():
            if node == "__interrupt__":
                for intr in data[node] or ():
                    value = getattr(intr, "value", intr)
                    self.interrupted.append(value)
                    await self._end_llm(ns)
                    content = (
                        value
                        if isinstance(value, str)
                        else json.dumps(_text_of(value), ensure_ascii=False)
                    )
                    asked = _user_input(content)
                    props = {**(asked.props or {}), "card": _question_card(content)}
                    asked = asked.model_copy(update={"props": props})
                    await self.em.send(await self.agent_block(ns), asked)
                continue
            await self._end_llm(ns)
            for key in list(self.em.blocks):  # a subgraph run by this node has ended
                if (
                    isinstance(key, tuple)
                    and key[0] == "ns"
                    and len(key[1]) == len(ns) + 1
                    and key[1][:-1] == ns
                    and _node(key[1][-1]) == node
                ):
                    await self._close_ns(key[1])

    async def _close_ns(self, ns: tuple[str, ...]) -> None:
        for inner in list(self.current):
            if inner[: len(ns)] == ns:
                await self._end_llm(inner)
        for key in reversed(list(self.em.blocks)):
            if isinstance(key, tuple) and key[0] == "ns" and key[1][: len(ns)] == ns:
                await self.em.close_block(key)

    async def _custom(self, ns: tuple[str, ...], data: Any) -> None:
        block = await self.agent_block(ns)
        if isinstance(data, str):
            await self.em.progress(block, data)
            return
        if isinstance(data, Mapping):
            for k in ("progress", "message", "status"):
                if isinstance(data.get(k), str) and len(data) == 1:
                    await self.em.progress(block, data[k])
                    return
            await self.em.send(block, _event("custom", dict(_text_of(dict(data)))))
            return
        await self.em.send(block, _event("custom", {"value": _text_of(data)}))


def _has_checkpointer(graph: Any) -> bool:
    cp = getattr(graph, "checkpointer", None)
    return cp not in (None, False)


# What build_input returns for a card's answer when no interrupt waits for one: the
# responder says so instead of running the graph.
_NOTHING_WAITS_INPUT = object()


async def build_input(
    graph: Any, request: Any, config: dict[str, Any], input_key: str = "messages"
) -> Any:
    """What the graph is run with: a resume, the new question, or the history and question.

    Args:
        graph: the compiled graph.
        request: the request (its ``text`` and ``history``).
        config: the run's config (its ``thread_id``, with a checkpointer, continues a thread).
        input_key: the state key of the messages.
    """
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langgraph.types import Command

    text = str(getattr(request, "text", request))
    pending: list[Any] = []
    state = None
    if _has_checkpointer(graph) and config.get("configurable", {}).get("thread_id"):
        state = await graph.aget_state(config)
        pending = list(getattr(state, "interrupts", None) or ())
        if not pending:
            for task in getattr(state, "tasks", ()) or ():
                pending.extend(getattr(task, "interrupts", None) or ())
    answer = _answer_of(request, bool(pending)) if not isinstance(request, str) else text
    if answer is None:  # a card's answer, and no interrupt waits for one
        return _NOTHING_WAITS_INPUT
    if state is not None:
        if len(pending) > 1:  # parallel interrupts: the answer goes to each of them
            return Command(resume={i.id: answer for i in pending})
        if pending:
            return Command(resume=answer)
        if getattr(state, "values", None):
            return {input_key: [HumanMessage(text)]}
    kinds = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}
    history = [
        kinds.get(t.role, HumanMessage)(t.text) for t in getattr(request, "history", ()) or ()
    ]
    return {input_key: [*history, HumanMessage(text)]}


def responder(
    graph: Any,
    *,
    config: Mapping[str, Any] | None = None,
    input_key: str = "messages",
    make_input: Callable[[Any], Any] | None = None,
    label: str | None = None,
) -> SourceResponder:
    """A responder for ``StreamingChat`` streaming a compiled LangGraph graph.

    Args:
        graph: the compiled graph (``StateGraph(...).compile(...)``).
        config: the run config; ``configurable.thread_id`` defaults to a hash of the asker's
            address and the chat session (:func:`~agent_stream.sources.approvals.thread_id`).
        input_key: the state key holding the conversation's messages.
        make_input: ``(request) -> input`` replacing the default input (history + question).
        label: the ``llm`` blocks' label (default: the node's name).
    """
    _require("langgraph", "langgraph", "the LangGraph source")

    async def respond(request: Any, out: _Scope) -> None:
        em = _Emitter(out)
        mapper = GraphStream(em, label=label)
        cfg: dict[str, Any] = dict(config or {})
        conf = dict(cfg.get("configurable") or {})
        thread = _thread_id(request)  # of (sender, session): never the session alone
        if thread is not None and "thread_id" not in conf:
            conf["thread_id"] = thread
        cfg["configurable"] = conf

        async def run() -> None:
            inp = (
                make_input(request)
                if make_input is not None
                else await build_input(graph, request, cfg, input_key)
            )
            if inp is _NOTHING_WAITS_INPUT:
                await em.out.send(_text(_NOTHING_WAITS))
                return
            stream = graph.astream(inp, cfg, stream_mode=MODES, subgraphs=True)
            async with contextlib.aclosing(stream):
                async for ns, mode, data in em.events(stream):
                    if not mapper.fast(ns, mode, data):
                        await mapper.feed(ns, mode, data)

        await _drive(em, run)

    return respond
