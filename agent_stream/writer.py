"""StreamWriter: the author's API for hierarchical streams (stream > thread > block > message).

IDs and lifecycle events are handled here; the author only writes content::

    async with StreamWriter(sink) as out:
        async with out.block("llm", label="Answer") as b:
            async with b.message("thinking") as m:
                await m.append("Let me")
            await b.send(tool_call(id="call_1", name="search", arguments='{"q":"x"}'))
        weather, news = await out.parallel(get_weather, get_news)

Every started stream, thread, block and message is ended, with status ``error`` when its body
raises and ``cancelled`` when it is cancelled; the exception then propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from agent_stream import merge
from agent_stream.errors import StreamError
from agent_stream.ids import IdGenerator
from agent_stream.message import (
    BLOCK_END,
    BLOCK_START,
    MESSAGE_END,
    MESSAGE_START,
    STREAM_END,
    STREAM_START,
    TEXT,
    THREAD_END,
    THREAD_START,
    BlockEndData,
    BlockStartData,
    Message,
    MessageEndData,
    MessageStartData,
    Metadata,
    StreamEndData,
    StreamStartData,
    ThreadEndData,
    ThreadStartData,
    Usage,
    lifecycle,
)
from agent_stream.message import card as _card
from agent_stream.message import text as _text
from agent_stream.relay import Relayable, relay_into
from agent_stream.toolcall import Progress, ToolCallScope

if TYPE_CHECKING:
    from agent_stream.assemble import Transcript

Sink = Callable[[Message], Awaitable[None]]
Flush = Callable[[str | None, str], Awaitable[None]]
T = TypeVar("T")


def _status_of(exc: BaseException | None) -> str:
    if exc is None:
        return "completed"
    if isinstance(exc, (asyncio.CancelledError, GeneratorExit)):
        return "cancelled"
    return "error"


def _ms(start: float) -> int:
    return int((time.monotonic() - start) * 1000)


_new_message = Message.__new__
_set_slot = object.__setattr__
_HOLD_MAX = 1024  # text deltas one chunk may gather (MessageHandle.hold)


class _Core:
    """State shared by every scope of one stream: the sink, ids and sequence numbers."""

    def __init__(
        self, sink: Sink, ids: IdGenerator, stamp: bool, flush: Flush | None = None
    ) -> None:
        self.sink = sink
        self.ids = ids
        self.stamp = stamp
        self.flush = flush
        self.sequence = 0
        self.block_messages: dict[str, set[tuple[str | None, str]]] = {}
        self.held: MessageHandle | None = None  # the message holding text (MessageHandle.hold)

    def count(self, block_id: str | None, thread_id: str | None, message_id: str) -> None:
        if block_id is not None:
            self.block_messages.setdefault(block_id, set()).add((thread_id, message_id))

    async def release(self) -> None:
        """Send the text a message holds as one chunk (before anything else goes out)."""
        h = self.held
        if h is not None:
            self.held = None
            await h._send_held()

    async def emit(self, msg: Message) -> None:
        if self.held is not None:
            await self.release()
        if msg.chunk_id is None:
            msg.chunk_id = self.ids.chunk()
        if self.stamp:
            self.sequence += 1
            msg.metadata = Metadata(timestamp=time.time_ns(), sequence=self.sequence)
        await self.sink(msg)


class Scope:
    """Where content goes: the stream itself, a thread, or a block (possibly inside a thread).

    Args:
        core: the stream it belongs to (scopes are made by a StreamWriter, not by hand).
        thread_id: the thread its Messages go in (None: none).
        block_id: the block its Messages go in (None: none).
    """

    def __init__(self, core: _Core, thread_id: str | None, block_id: str | None) -> None:
        self._core = core
        self.thread_id = thread_id
        self.block_id = block_id

    # -- structure --------------------------------------------------------------------------
    def block(self, type: str = "mixed", label: str | None = None) -> BlockScope:
        """A block (one LLM call, tool call, sub-task): block_start ... block_end.

        Inside a block, its block_start names that block as ``parent_block_id``.

        Args:
            type: what the block is (``mixed``, ``llm``, ``tool``, ``agent``...).
            label: a name for people to read.
        """
        block = BlockScope(self._core, self.thread_id, type, label)
        if self.block_id is not None:
            block.start_data = {"parent_block_id": self.block_id}
        return block

    def thread(self, label: str | None = None, type: str | None = None) -> ThreadScope:
        """A concurrent thread of output: thread_start ... thread_end, its own thread_id.

        Args:
            label: a name for people to read.
            type: what the thread is, free text (None: not said).
        """
        return ThreadScope(self._core, self.block_id, label, type)

    def message(self, type: str = TEXT, props: Mapping[str, Any] | None = None) -> MessageHandle:
        """A message written in deltas: message_start ... message_end.

        Args:
            type: the Message type (``text`` by default).
            props: props sent as the first chunk (None: none).
        """
        mid = self._core.ids.message()
        self._core.count(self.block_id, self.thread_id, mid)
        return MessageHandle(
            self._core, mid, self.thread_id, self.block_id, type, dict(props) if props else None
        )

    async def parallel(
        self, *fns: Callable[[ThreadScope], Awaitable[T]], labels: list[str] | None = None
    ) -> list[T]:
        """Run each ``fn(thread)`` concurrently in a thread of its own; results in order.

        When one raises, the others are cancelled (their threads end ``cancelled``) and the
        first exception propagates.

        Args:
            *fns: the async functions, each given its thread.
            labels: one thread label per function (None: each function's ``__name__``).

        Raises:
            StreamError: ``labels`` and ``fns`` differ in number.
        """
        if labels is not None and len(labels) != len(fns):
            raise StreamError(f"parallel: {len(fns)} functions but {len(labels)} labels")

        async def run(i: int, fn: Callable[[ThreadScope], Awaitable[T]]) -> T:
            label = labels[i] if labels else getattr(fn, "__name__", None)
            async with self.thread(label=label) as th:
                return await fn(th)

        tasks = [asyncio.ensure_future(run(i, fn)) for i, fn in enumerate(fns)]
        try:
            _done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        if pending:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        for task in tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        return [task.result() for task in tasks]

    # -- whole messages -----------------------------------------------------------------------
    async def send(self, msg: Message) -> Message:
        """Send a whole message in this scope; ids are filled in.

        Args:
            msg: the Message (its own ids, when set, are kept).

        Returns:
            The Message as sent, with its ids.
        """
        update: dict[str, Any] = {}
        if msg.message_id is None:
            mid = self._core.ids.message()
            update["message_id"] = mid
        else:
            mid = msg.message_id
        if msg.thread_id is None and self.thread_id is not None:
            update["thread_id"] = self.thread_id
        if msg.block_id is None and self.block_id is not None:
            update["block_id"] = self.block_id
        out = msg.model_copy(update=update) if update else msg.model_copy()
        self._core.count(out.block_id, out.thread_id, mid)
        await self._core.emit(out)
        return out

    async def text(self, content: str) -> Message:
        """Send a whole text message.

        Args:
            content: the text.

        Returns:
            The Message as sent, with its ids.
        """
        return await self.send(_text(content))

    async def card(
        self,
        kind: str,
        payload: Any,
        card_id: str | None = None,
        *,
        terminal: bool | None = None,
    ) -> Message:
        """Send an interactive card: the chat protocol's own way to offer choices or ask for an
        answer (a peer that renders no cards reads its text fallback).

        Args:
            kind: ``carousel``, ``detail``, ``form``, ``review`` or ``custom``.
            payload: the card's payload: a dict, or one of uagents-core's card payload models
                (``ReviewCardPayload``...).
            card_id: its id, which the answer echoes (None: none).
            terminal: no answer is expected.

        Returns:
            The Message as sent, with its ids.
        """
        return await self.send(_card(kind, payload, card_id, terminal))

    @property
    def holds_text(self) -> bool:
        """Whether a message of this stream holds text (see :meth:`MessageHandle.hold`)."""
        return self._core.held is not None

    async def release(self) -> None:
        """Send now the text a message of this stream holds (see :meth:`MessageHandle.hold`)."""
        await self._core.release()

    # -- tools and progress -----------------------------------------------------------------------
    def tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        call_id: str | None = None,
    ) -> ToolCallScope:
        """A tool call written as a scope.

        ``async with b.tool("get_weather", {"city": "Paris"}) as t: await t.progress("...");
        t.result(...)``.

        Args:
            name: the tool's name.
            arguments: its arguments: a mapping (sent as JSON), a JSON string, or None.
            call_id: the call's id; a fresh ``call_…`` when None.

        Sends the ``tool_call`` on enter, a ``loading`` line for its progress, and the
        ``tool_result`` when the body returns; when the body raises, the result carries the
        failure (``is_error``) and the exception propagates.
        """
        return ToolCallScope(self, name, arguments, call_id=call_id)

    def progress(self, message: str) -> Progress:
        """A progress line: ``async with b.progress("Searching…") as p: await p.update(...)``.

        A ``loading`` message marked ``done`` when the body returns.

        Args:
            message: the work in progress.
        """
        return Progress(self, message)

    # -- relay ------------------------------------------------------------------------------------
    async def relay(
        self,
        reply: Relayable | Awaitable[Relayable],
        *,
        label: str | None = None,
        type: str = "agent",
        name: str | None = None,
        agent: str | None = None,
    ) -> Transcript:
        """Stream another agent's reply, live, into a block of this scope.

        The reply's Messages are re-identified into this stream
        (:class:`~agent_stream.relay.Reidentifier`) inside a new block whose block_start data
        carries ``agent``, ``agent_name`` and ``parent_block_id`` (this scope's block).

        When the sub-reply does not complete (error, timeout, lost, not delivered, refused),
        the relay block ends with status ``error`` (an ``error`` message says why unless the
        sub-agent's own error came through) and :class:`~agent_stream.relay.RelayError` is
        raised: catch it to go on. When this task is cancelled, the sub-reply is cancelled
        (``reply.cancel()``), what it left open ends ``cancelled``, and the cancellation
        propagates.

        Args:
            reply: a :class:`~agent_stream.relay.Relayable` (e.g. the
                :class:`~agent_stream.uagents.Reply` of ``chat.ask``) or an awaitable of one
                (the ask itself).
            label: the block's label (None: ``name``, else the peer's short address).
            type: the block's type.
            name: the sub-agent's name, the block_start's ``agent_name``.
            agent: the sub-agent's address for the block_start, when the reply has no peer.

        Returns:
            The sub-reply's final Transcript.

        Raises:
            RelayError: the sub-reply did not complete.
        """
        return await relay_into(self, reply, label=label, type=type, name=name, agent=agent)

    def _relay_block(self, type: str, label: str, start_data: dict[str, Any]) -> BlockScope:
        """The relay's way in: a new block of this scope whose block_start carries
        ``start_data`` (see :class:`agent_stream.relay.RelayHost`)."""
        block = BlockScope(self._core, self.thread_id, type, label)
        block.start_data = start_data
        return block


class BlockScope(Scope):
    """``async with scope.block(...)``: block_start on enter, block_end on exit.

    Args:
        core: the stream it belongs to (scopes are made by a StreamWriter, not by hand).
        thread_id: the thread the block is in (None: none).
        type: what the block is (``mixed``, ``llm``, ``tool``, ``agent``...).
        label: a name for people to read.
    """

    def __init__(self, core: _Core, thread_id: str | None, type: str, label: str | None) -> None:
        super().__init__(core, thread_id, core.ids.block())
        self.type = type
        self.label = label
        self.start_data: dict[str, Any] = {}  # extra block_start data (e.g. a relay's agent)
        self.end_data: dict[str, Any] = {}  # extra block_end data
        self.status: str | None = None  # ends with this when the body returns (None: completed)
        self._start = 0.0

    # -- the relay's interface (see agent_stream.relay.RelayBlock) -------------------------------
    @property
    def _ids(self) -> IdGenerator:
        return self._core.ids

    async def _relay_emit(self, m: Message) -> None:
        """Emit a relayed Message whose ids are already this stream's; the sink flushes after
        each delta so the sub-agent's chunk boundaries pass through."""
        core = self._core
        if m.message_id is not None and m.block_id == self.block_id and not m.is_lifecycle:
            core.count(m.block_id, m.thread_id, m.message_id)
        await core.emit(m)
        if core.flush is not None and m.delta and m.message_id is not None:
            await core.flush(m.thread_id, m.message_id)

    async def __aenter__(self) -> BlockScope:
        self._start = time.monotonic()
        assert self.block_id is not None
        await self._core.emit(
            lifecycle(
                BLOCK_START,
                BlockStartData(
                    block_id=self.block_id, type=self.type, label=self.label, **self.start_data
                ),
                block_id=self.block_id,
                thread_id=self.thread_id,
            )
        )
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self.block_id is not None
        status = _status_of(exc)
        if exc is None and self.status is not None:
            status = self.status
        await self._core.emit(
            lifecycle(
                BLOCK_END,
                BlockEndData(
                    block_id=self.block_id,
                    duration_ms=_ms(self._start),
                    message_count=len(self._core.block_messages.get(self.block_id, ())),
                    status=status,  # type: ignore[arg-type]
                    **self.end_data,
                ),
                block_id=self.block_id,
                thread_id=self.thread_id,
            )
        )


class ThreadScope(Scope):
    """``async with scope.thread(...)``: thread_start on enter, thread_end on exit.

    Args:
        core: the stream it belongs to (scopes are made by a StreamWriter, not by hand).
        block_id: the block the thread is in (None: none).
        label: a name for people to read.
        type: what the thread is, free text (None: not said).
    """

    def __init__(
        self, core: _Core, block_id: str | None, label: str | None, type: str | None
    ) -> None:
        super().__init__(core, core.ids.thread(), block_id)
        self.label = label
        self.type = type
        self._start = 0.0

    async def __aenter__(self) -> ThreadScope:
        self._start = time.monotonic()
        assert self.thread_id is not None
        await self._core.emit(
            lifecycle(
                THREAD_START,
                ThreadStartData(thread_id=self.thread_id, type=self.type, label=self.label),
                thread_id=self.thread_id,
                block_id=self.block_id,
            )
        )
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self.thread_id is not None
        await self._core.emit(
            lifecycle(
                THREAD_END,
                ThreadEndData(
                    thread_id=self.thread_id,
                    duration_ms=_ms(self._start),
                    status=_status_of(exc),  # type: ignore[arg-type]
                ),
                thread_id=self.thread_id,
                block_id=self.block_id,
            )
        )


class MessageHandle:
    """One message written in deltas. ``async with``: message_start ... message_end.

    Args:
        core: the stream it belongs to (scopes are made by a StreamWriter, not by hand).
        message_id: the message's id.
        thread_id: the thread it is in (None: none).
        block_id: the block it is in (None: none).
        type: the Message type.
        props: props sent as the first chunk (None: none).
    """

    def __init__(
        self,
        core: _Core,
        message_id: str,
        thread_id: str | None,
        block_id: str | None,
        type: str,
        props: dict[str, Any] | None,
    ) -> None:
        self._core = core
        self.message_id = message_id
        self.thread_id = thread_id
        self.block_id = block_id
        self.type = type
        self.chunk_count = 0
        self._initial = props
        self._text: list[str] = []  # props.content appended so far, for message_end's extra
        self._other: dict[str, Any] | None = None
        self._start = 0.0
        self._ended = False
        self._held: list[str] = []  # text deltas kept to go out as one chunk (see hold)
        # A validated text delta of this message (its fields and the fields set), copied for
        # each append; rebuilt after a type change.
        self._proto: tuple[dict[str, Any], set[str]] | None = None

    async def __aenter__(self) -> MessageHandle:
        self._start = time.monotonic()
        await self._core.emit(
            lifecycle(
                MESSAGE_START,
                MessageStartData(
                    message_id=self.message_id, type=self.type, thread_id=self.thread_id
                ),
                message_id=self.message_id,
                thread_id=self.thread_id,
                block_id=self.block_id,
            )
        )
        if self._initial is not None:
            await self._chunk(Message(type=self.type, props=self._initial))
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.end(_status_of(exc))

    async def end(self, status: str = "completed") -> None:
        """Send message_end (once) with the chunk count and the full content.

        Args:
            status: how the message ended (``completed``, ``error``, ``cancelled``).
        """
        if self._ended:
            return
        if self._core.held is not None:  # held text goes first and counts in extra.content
            await self._core.release()
        self._ended = True
        extra: dict[str, Any] = {}
        if self._other is not None and "content" in self._other:
            extra["content"] = self._other["content"]
        elif self._text:
            extra["content"] = "".join(self._text)
        await self._core.emit(
            lifecycle(
                MESSAGE_END,
                MessageEndData(
                    message_id=self.message_id,
                    type=self.type,
                    thread_id=self.thread_id,
                    duration_ms=_ms(self._start),
                    chunk_count=self.chunk_count,
                    status=status,
                    extra=extra or None,
                ),
                message_id=self.message_id,
                thread_id=self.thread_id,
                block_id=self.block_id,
            )
        )

    async def _chunk(self, msg: Message) -> None:
        if self._ended:
            raise StreamError(f"message {self.message_id} has ended; nothing more can be sent")
        if self._core.held is not None:  # held text is older than this chunk
            await self._core.release()
        msg.message_id = self.message_id
        msg.thread_id = self.thread_id
        msg.block_id = self.block_id
        self.chunk_count += 1
        self._track(msg)
        await self._core.emit(msg)

    def _track(self, msg: Message) -> None:
        # Keeps just enough to report extra.content in message_end.
        if not msg.delta or msg.type_change:
            self._other = merge.copy_json(msg.props or {})
            self._text = []
        elif self._other is None and msg.delta_path is None and msg.delta_action is None:
            c = (msg.props or {}).get("content")
            if isinstance(c, str):
                self._text.append(c)
        else:
            if self._other is None:
                self._other = {"content": "".join(self._text)} if self._text else {}
                self._text = []
            with contextlib.suppress(StreamError):
                self._other = merge.apply(
                    self._other, msg.delta_action or "append", msg.delta_path, msg.props or {}
                )

    def hold(self, value: str) -> bool:
        """Keep a text delta to go out as one chunk with the ones held after it.

        They go at the stream's next chunk or event (whichever scope sends it) or its
        ``release()``.

        For a producer that reads a backlog of deltas faster than it waits for them: it holds
        while more is at hand and releases before it waits. Returns False (nothing kept) when
        another message holds text, this one has ended, or it holds enough already: then
        ``append`` the delta.

        Args:
            value: the text delta.

        Returns:
            True when it was kept, False when it must be appended instead.
        """
        core = self._core
        if core.held is self:
            if len(self._held) < _HOLD_MAX and type(value) is str:
                self._held.append(value)
                return True
            return False
        if core.held is None and type(value) is str and not self._ended:
            core.held = self
            self._held = [value]
            return True
        return False

    async def _send_held(self) -> None:
        text, self._held = "".join(self._held), []
        if text:
            core = self._core
            if core.stamp:
                await core.emit(self._text_chunk(text))
            else:
                await core.sink(self._text_chunk(text))

    async def append(self, value: Any, path: str | None = None) -> None:
        """Append: text onto props.content (no path), or any value at ``path``.

        Args:
            value: what to append (a string when there is no path).
            path: where, a dotted path into the props (None: props.content).

        Raises:
            StreamError: no path and not a string, or the message has ended.
        """
        if path is not None:
            await self._delta("append", path, value)
            return
        if not isinstance(value, str):
            raise StreamError("append without a path takes a string (props.content)")
        if self._ended:
            raise StreamError(f"message {self.message_id} has ended; nothing more can be sent")
        core = self._core
        if core.held is not None:
            await core.release()
        if core.stamp:
            await core.emit(self._text_chunk(value))
        else:  # emit would do nothing more: the chunk id is set
            await core.sink(self._text_chunk(value))

    def _text_chunk(self, value: str) -> Message:
        """A text delta of this message (counted and tracked), ready to send."""
        proto = self._proto
        if proto is None:
            m = Message(
                type=self.type,
                props={"content": ""},
                message_id=self.message_id,
                thread_id=self.thread_id,
                block_id=self.block_id,
                delta=True,
            )
            proto = self._proto = (dict(m.__dict__), {*m.model_fields_set, "chunk_id"})
        # The hot path of streaming: validating each chunk anew cost more than everything else
        # the writer does per token, and only the content (a str, checked above) and the
        # writer's own chunk id differ from the validated prototype; so the chunk is a copy of
        # it, made the way pydantic copies a model.
        core = self._core
        d = proto[0].copy()
        d["props"] = {"content": value}
        d["chunk_id"] = core.ids.chunk()
        msg = _new_message(Message)
        _set_slot(msg, "__dict__", d)
        _set_slot(msg, "__pydantic_fields_set__", proto[1].copy())
        _set_slot(msg, "__pydantic_extra__", None)
        _set_slot(msg, "__pydantic_private__", None)
        self.chunk_count += 1
        if self._other is None:  # what _track keeps of a plain text delta
            self._text.append(value)
        else:
            self._track(msg)
        return msg

    async def replace(self, value: Any, path: str | None = None) -> None:
        """Replace the value at ``path``.

        Args:
            value: the new value (a dict of props when there is no path).
            path: where, a dotted path into the props (None: all the props).

        Raises:
            StreamError: no path and ``value`` is not a dict.
        """
        await self._delta("replace", path, value)

    async def merge(self, value: Mapping[str, Any], path: str | None = None) -> None:
        """Shallow-merge an object into the object at ``path``.

        Args:
            value: the keys and values to merge in.
            path: where, a dotted path into the props (None: the props).
        """
        await self._delta("merge", path, dict(value))

    async def set(self, value: Any, path: str) -> None:
        """Set the value at ``path``.

        Args:
            value: the new value.
            path: where, a dotted path into the props.
        """
        await self._delta("set", path, value)

    async def change_type(self, new_type: str, props: Mapping[str, Any] | None = None) -> None:
        """Correct the message's type (type_change).

        Args:
            new_type: the Message type it is.
            props: props replacing the ones sent so far (None: they are kept).
        """
        if self._core.held is not None:  # held text goes out under the old type
            await self._core.release()
        self.type = new_type
        self._proto = None
        await self._chunk(
            Message(
                type=new_type, type_change=True, props=dict(props) if props is not None else None
            )
        )

    async def _delta(self, action: str, path: str | None, value: Any) -> None:
        if path is None:
            if not isinstance(value, dict):
                raise StreamError(f"{action} without a path takes an object (the props)")
            props = value
        else:
            props = merge.value_at(path, value)
        await self._chunk(
            Message(
                type=self.type,
                props=props,
                delta=True,
                delta_path=path,
                delta_action=action,  # type: ignore[arg-type]
            )
        )


class StreamWriter(Scope):
    """The whole stream: ``async with StreamWriter(sink) as out`` sends stream_start/stream_end.

    Args:
        sink: any async callable taking one Message; it is awaited for every Message, in
            order per scope.
        request_id: the stream_start's and stream_end's ``request_id``.
        trace_id: the stream_start's ``trace_id``.
        ids: makes the chunk, message, block and thread ids (None: a fresh IdGenerator).
        stamp: add metadata (Unix-ns timestamp, sequence) to every chunk.
        flush: ``flush(thread_id, message_id)``, awaited after each relayed chunk of a message
            (see :meth:`Scope.relay`) so a sink that buffers text (a wire's chunker) sends it
            on now: the sub-agent's chunk boundaries pass through a relay instead of being
            re-buffered (None: nothing is awaited).
    """

    def __init__(
        self,
        sink: Sink,
        *,
        request_id: str | None = None,
        trace_id: str | None = None,
        ids: IdGenerator | None = None,
        stamp: bool = False,
        flush: Flush | None = None,
    ) -> None:
        super().__init__(_Core(sink, ids or IdGenerator(), stamp, flush), None, None)
        self.request_id = request_id
        self.trace_id = trace_id
        self.usage: dict[str, Any] | None = None
        self.finish_reason: str | None = None
        self.failure: str | None = None
        self._start = 0.0
        self._ended = False

    async def __aenter__(self) -> StreamWriter:
        self._start = time.monotonic()
        await self._core.emit(
            lifecycle(
                STREAM_START,
                StreamStartData(
                    request_id=self.request_id, trace_id=self.trace_id, timestamp=time.time_ns()
                ),
            )
        )
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        status = _status_of(exc)
        err = None
        if status == "error":
            err = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        elif status == "completed" and self.failure is not None:
            status, err = "error", self.failure
        await self.end(status, error=err)

    def fail(self, error: str) -> None:
        """Mark the stream failed, for failures already reported as an error Message.

        It then ends with status error even if the body returns normally.

        Args:
            error: the stream_end's ``error``.
        """
        self.failure = error

    async def end(self, status: str = "completed", error: str | None = None) -> None:
        """Send stream_end (once).

        Args:
            status: how the stream ended (``completed``, ``error``, ``cancelled``).
            error: what went wrong, when it did.
        """
        if self._ended:
            return
        self._ended = True
        usage = Usage(**self.usage) if self.usage else None
        await self._core.emit(
            lifecycle(
                STREAM_END,
                StreamEndData(
                    request_id=self.request_id,
                    timestamp=time.time_ns(),
                    duration_ms=_ms(self._start),
                    status=status,  # type: ignore[arg-type]
                    error=error,
                    usage=usage,
                    finish_reason=self.finish_reason,
                ),
            )
        )


async def collect(body: Callable[[StreamWriter], Awaitable[Any]], **kw: Any) -> list[Message]:
    """Run ``body(out)`` inside a StreamWriter and return every Message it produced.

    Args:
        body: the async function writing the stream.
        **kw: the StreamWriter's keyword arguments (``request_id``, ``stamp``...).
    """
    out: list[Message] = []

    async def sink(m: Message) -> None:
        out.append(m)

    async with StreamWriter(sink, **kw) as w:
        await body(w)
    return out
