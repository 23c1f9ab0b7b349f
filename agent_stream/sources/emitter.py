"""The writer side shared by every framework source: blocks and messages opened and closed by key.

A framework streams flat events (a part starts, a delta, a tool result, an agent changes); the
:class:`Emitter` keeps the open blocks and messages under the framework's own keys (a message id,
a tool call id, a namespace), nests blocks with ``parent_block_id`` as relayed blocks are, sums
usage over model calls, and ends whatever is still open when the run ends, fails or is
cancelled. :func:`drive` runs one framework run inside it: an exception becomes an ``error``
message and status ``error``; a cancellation ends everything ``cancelled`` and propagates.
Whatever a source cannot map is reported once per kind through the ``agent_stream.sources``
logger (never dropped silently).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Hashable, Mapping
from typing import Any

from agent_stream.errors import StreamError
from agent_stream.message import LOADING, TOOL_CALL, Message, tool_result
from agent_stream.message import error as _error
from agent_stream.sources.eager import eager_events
from agent_stream.writer import BlockScope, MessageHandle, Scope, StreamWriter

__all__ = [
    "AGENT",
    "LLM",
    "Emitter",
    "SourceResponder",
    "aclose",
    "drive",
    "field",
    "log",
    "mapped_responder",
    "resolve",
    "text_of",
]

log = logging.getLogger("agent_stream.sources")

LLM = "llm"
AGENT = "agent"

# What every framework source returns: a responder ``(request, out)`` for StreamingChat. The
# request is read duck-typed (``text``, ``history``, ``session``): sources import no plugin.
SourceResponder = Callable[[Any, Scope], Awaitable[None]]


_MISSING: Any = object()


def field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` for a mapping, else ``obj.name``: framework events come as either.

    Args:
        obj: a mapping or an object.
        name: the key or attribute.
        default: what is returned when it has neither.
    """
    if type(obj) is dict:  # the common cases first: isinstance against an ABC is slow
        return obj.get(name, default)
    value = getattr(obj, name, _MISSING)
    if value is not _MISSING:
        return value
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return default


def text_of(value: Any) -> Any:
    """A tool's result as the transcript carries it: a string, or any JSON value as it is.

    Args:
        value: the tool's result (a pydantic model is dumped; anything else not JSON: its str).
    """
    if value is None or isinstance(value, (str, int, float, bool, list, dict)):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        with contextlib.suppress(Exception):
            return dump(mode="json")
    with contextlib.suppress(TypeError, ValueError):
        return json.loads(json.dumps(value))
    return str(value)


class Emitter:
    """Writes one framework run into ``out``; see the module doc.

    Args:
        out: the stream or scope the run writes into.
    """

    def __init__(self, out: Scope) -> None:
        self.out = out
        self.blocks: dict[Hashable, BlockScope] = {}
        self.messages: dict[Hashable, MessageHandle] = {}
        self.tool_names: dict[str, str] = {}
        self.call_blocks: dict[str, str] = {}  # tool call id -> the block that made the call
        self.usage: dict[str, int] = {}
        self.models: set[str] = set()  # the models the llm blocks name
        self.model_calls = 0
        self.failure: str | None = None
        # True while a loop over the framework's stream (eager_events) runs its body with more
        # events at hand: text deltas are then held and go out together (see .eager)
        self.holding = False
        self._warned: set[str] = set()

    # -- structure ------------------------------------------------------------------------------
    def scope(self, block: Hashable | None) -> Scope:
        """The open block under ``block``, else the stream (or scope) the run writes into.

        Args:
            block: the block's key (None: the run's own scope).
        """
        if block is None:
            return self.out
        return self.blocks.get(block) or self.out

    def block_id(self, block: Hashable | None) -> str | None:
        """The id of the open block under ``block`` (None: no such block).

        Args:
            block: the block's key (None: none).
        """
        b = self.blocks.get(block) if block is not None else None
        return b.block_id if b is not None else None

    async def open_block(
        self,
        key: Hashable,
        type: str,
        label: str | None,
        *,
        parent: Hashable | None = None,
        parent_id: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> BlockScope:
        """Start a block nested under the open block ``parent`` (a key) or ``parent_id``.

        Args:
            key: the caller's key for the block.
            type: the block's type (e.g. ``agent``, ``llm``).
            label: its label (None: none).
            parent: the key of the open block it nests in (None: see ``parent_id``).
            parent_id: the id of the block it nests in, when not opened here (None: the scope).
            data: more fields of its start (None values dropped).

        Returns:
            The block (the open one when ``key`` is open already).
        """
        if key in self.blocks:
            return self.blocks[key]
        block = self.out.block(type, label)
        start: dict[str, Any] = {k: v for k, v in (data or {}).items() if v is not None}
        if parent is not None:
            parent_id = self.block_id(parent) or parent_id
        if parent_id is None:
            parent_id = self.out.block_id
        if parent_id is not None:
            start["parent_block_id"] = parent_id
        block.start_data = start
        await block.__aenter__()
        self.blocks[key] = block
        if type == LLM:
            self.model_calls += 1
            model = start.get("model")
            if isinstance(model, str):
                self.models.add(model)
        return block

    async def close_block(self, key: Hashable, status: str = "completed") -> None:
        """End the block under ``key`` and every message still open in it.

        Args:
            key: the block's key (unknown: nothing happens).
            status: the block's end status.
        """
        block = self.blocks.pop(key, None)
        if block is None:
            return
        for mk, h in list(self.messages.items()):
            if h.block_id == block.block_id:
                await self.end_message(mk, status)
        block.status = status
        await block.__aexit__(None, None, None)

    # -- messages -------------------------------------------------------------------------------
    def has(self, key: Hashable) -> bool:
        """Whether a message is open under ``key``.

        Args:
            key: the caller's key for the message (any hashable, e.g. an output index).
        """
        return key in self.messages

    async def open(
        self,
        key: Hashable,
        type: str,
        block: Hashable | None,
        props: Mapping[str, Any] | None = None,
    ) -> MessageHandle:
        """The message open under ``key``; opened as ``type`` in ``block`` when it is not.

        Args:
            key: the caller's key for the message (any hashable, e.g. an output index).
            type: the message's type.
            block: the key of the block it goes in (None: the run's own scope).
            props: its starting props (None: none).
        """
        h = self.messages.get(key)
        if h is None:
            h = self.scope(block).message(type, props)
            await h.__aenter__()
            self.messages[key] = h
        return h

    async def append(self, key: Hashable, type: str, block: Hashable | None, delta: str) -> None:
        """Append text to the message under ``key`` (opened as ``type`` in ``block``).

        Args:
            key: the caller's key for the message (any hashable, e.g. an output index).
            type: the message's type, when it is opened here.
            block: the key of the block it goes in (None: the run's own scope).
            delta: the text to append (empty: nothing happens).
        """
        if not delta:
            return
        h = self.messages.get(key)
        if h is None:
            h = await self.open(key, type, block)
        if not (self.holding and h.hold(delta)):
            await h.append(delta)

    def events(self, stream: AsyncIterable[Any]) -> AsyncIterator[Any]:
        """Iterate the framework's ``stream``, batching the text deltas of a backlog.

        Args:
            stream: the framework's event stream.
        """
        return eager_events(self, stream)

    async def end_message(self, key: Hashable, status: str = "completed") -> None:
        """End the message under ``key`` (nothing when none is open).

        Args:
            key: the caller's key for the message (any hashable, e.g. an output index).
            status: its end status.
        """
        h = self.messages.pop(key, None)
        if h is not None:
            with contextlib.suppress(StreamError):
                await h.end(status)

    async def tool_call(
        self,
        key: Hashable,
        block: Hashable | None,
        call_id: str | None,
        name: str | None,
        arguments: str = "",
    ) -> MessageHandle:
        """A ``tool_call`` message: id and name first, then its arguments as deltas.

        Args:
            key: the caller's key for the message (any hashable, e.g. an output index).
            block: the key of the block it goes in (None: the run's own scope).
            call_id: the tool call's id (None: unknown).
            name: the tool's name (None: unknown).
            arguments: the arguments so far (JSON text).

        Returns:
            The open ``tool_call`` message (more arguments: :meth:`tool_args`).
        """
        if call_id and name:
            self.tool_names[call_id] = name
        made_in = self.block_id(block)
        if call_id and made_in:
            self.call_blocks[call_id] = made_in
        h = self.messages.get(key)
        if h is None:  # the first chunk: id, name and what arguments there are so far
            return await self.open(
                key, TOOL_CALL, block, {"id": call_id, "name": name, "arguments": arguments}
            )
        if arguments:
            await h.append(arguments, path="arguments")
        return h

    async def tool_args(self, key: Hashable, delta: str) -> None:
        """Append argument text to the open ``tool_call`` message under ``key``.

        Args:
            key: the caller's key for the message (any hashable, e.g. an output index).
            delta: the arguments' next piece (JSON text).
        """
        h = self.messages.get(key)
        if h is not None and delta:
            await h.append(delta, path="arguments")

    async def tool_result(
        self,
        block: Hashable | None,
        call_id: str | None,
        name: str | None,
        content: Any,
        is_error: bool = False,
    ) -> None:
        """Send a ``tool_result`` message.

        Args:
            block: the key of the block it goes in (None: the run's own scope).
            call_id: the tool call's id (None: unknown).
            name: the tool's name (None: the name its call gave).
            content: the result (see :func:`text_of`).
            is_error: the tool failed.
        """
        if name is None and call_id:
            name = self.tool_names.get(call_id)
        await self.scope(block).send(
            tool_result(call_id, name, text_of(content), is_error=is_error)
        )

    async def progress(self, block: Hashable | None, text: str) -> None:
        """Send a finished ``loading`` message saying ``text``.

        Args:
            block: the key of the block it goes in (None: the run's own scope).
            text: what is going on.
        """
        async with self.scope(block).message(LOADING, {"message": text}) as m:
            await m.merge({"done": True})

    async def send(self, block: Hashable | None, msg: Message) -> None:
        """Send a whole message.

        Args:
            block: the key of the block it goes in (None: the run's own scope).
            msg: the message.
        """
        await self.scope(block).send(msg)

    # -- accounting -----------------------------------------------------------------------------
    def add_usage(
        self, prompt: int | None, completion: int | None, total: int | None = None
    ) -> None:
        """Add one model call's final figures.

        Args:
            prompt: the call's prompt tokens (None: 0).
            completion: its completion tokens (None: 0).
            total: its total tokens (None: prompt + completion).
        """
        p, c = int(prompt or 0), int(completion or 0)
        u = self.usage
        u["prompt_tokens"] = u.get("prompt_tokens", 0) + p
        u["completion_tokens"] = u.get("completion_tokens", 0) + c
        u["total_tokens"] = u.get("total_tokens", 0) + (int(total) if total else p + c)

    def warn(self, kind: str, detail: str) -> None:
        """Report, once per kind, something of the framework's output this source does not map.

        Args:
            kind: what was not mapped (e.g. an event type).
            detail: more about it, for the log.
        """
        if kind not in self._warned:
            self._warned.add(kind)
            log.warning("agent_stream source: %s not mapped (%s)", kind, detail)

    # -- ending ---------------------------------------------------------------------------------
    async def close_all(self, status: str) -> None:
        """End every open message and block.

        Args:
            status: their end status.
        """
        for key in list(self.messages):
            await self.end_message(key, status)
        for key in reversed(list(self.blocks)):
            await self.close_block(key, status)

    async def fail(self, text: str, code: str = "framework_error") -> None:
        """End what is open with status error and add an ``error`` message the user can read.

        Args:
            text: what the user reads.
            code: the error's code.
        """
        await self.close_all("error")
        if self.failure is None:
            self.failure = text
            await self.out.send(_error(text, code=code))

    def finish(self) -> None:
        """Report usage and failure on the stream (when ``out`` is the StreamWriter)."""
        out = self.out
        if isinstance(out, StreamWriter):
            if self.usage:
                out.usage = {**(out.usage or {}), **self.usage}
                if len(self.models) == 1:  # the reply's model (gen_ai.request.model)
                    out.usage.setdefault("model", next(iter(self.models)))
            if self.failure is not None:
                out.fail(self.failure)


async def drive(em: Emitter, run: Callable[[], Awaitable[None]]) -> None:
    """Run ``run()`` (one framework run writing through ``em``) and end it properly.

    Args:
        em: the emitter the run writes through.
        run: the run.
    """
    try:
        try:
            await run()
        finally:
            em.holding = False
    except asyncio.CancelledError:
        await em.close_all("cancelled")
        raise
    except Exception as exc:  # the framework failed: the reply says so and ends error
        await em.fail(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    else:
        await em.close_all("completed")
    em.finish()


async def resolve(value: Any) -> AsyncIterable[Any]:
    """A stream given as is or as an awaitable of one (a plain iterable is read as one too).

    Args:
        value: a stream, an awaitable of one, or a plain iterable.
    """
    if inspect.isawaitable(value):
        value = await value
    if not hasattr(value, "__aiter__") and hasattr(value, "__iter__"):
        return _aiter(value)
    return value  # type: ignore[no-any-return]


async def _aiter(items: Any) -> AsyncIterator[Any]:
    for item in items:
        yield item


async def aclose(events: Any) -> None:
    """Close a model's HTTP stream (the SDK's ``close``, a generator's ``aclose``).

    Args:
        events: the model's stream.
    """
    for name in ("close", "aclose"):
        fn = getattr(events, name, None)
        if callable(fn):
            with contextlib.suppress(Exception):  # closing is best effort
                r = fn()
                if inspect.isawaitable(r):
                    await r
            return


def mapped_responder(
    stream: Callable[[Any], Any], mapper_for: Callable[[Emitter], Any]
) -> SourceResponder:
    """A responder that feeds each event of ``stream(request)`` to the mapper ``mapper_for``
    builds (an object with async ``feed(event)`` and ``close()``), closing the model's stream
    whatever happens.

    Args:
        stream: the model's event stream for a request (or an awaitable of one).
        mapper_for: builds the mapper writing through an Emitter.
    """

    async def respond(request: Any, out: Any) -> None:
        em = Emitter(out)
        mapper = mapper_for(em)

        async def run() -> None:
            events = await resolve(stream(request))
            fast = getattr(mapper, "fast", None)  # a sync way for the commonest events
            try:
                async for ev in em.events(events):
                    if fast is None or not fast(ev):
                        await mapper.feed(ev)
            finally:
                await aclose(events)
            await mapper.close()

        await drive(em, run)

    return respond
