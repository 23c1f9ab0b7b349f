"""OpenAI Chat Completions chunks in, Messages out: ``OpenAIDecoder``. Pure.

``chat.completion.chunk`` dicts become Messages the way an LLM provider writes them.
``delta.reasoning_content`` (or ``delta.reasoning``) is a ``thinking`` message, ``delta.content``
a ``text`` message, ``delta.refusal`` a ``refusal`` message and each tool call a ``tool_call``
message with props ``{id, name, arguments}``. A new message starts whenever the kind switches;
tool-call fragments are merged by id when the server sends one (some reuse index 0 for every
call) and by index otherwise. Every message has message_start and message_end (with its chunk
count); finish_reason and usage go into stream_end's data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agent_stream.adapters._tracking import Warnings
from agent_stream.errors import WarningCode, WireError
from agent_stream.ids import IdGenerator
from agent_stream.message import (
    ERROR,
    MESSAGE_END,
    MESSAGE_START,
    REFUSAL,
    STREAM_END,
    STREAM_START,
    TEXT,
    THINKING,
    TOOL_CALL,
    DeltaAction,
    Message,
    MessageEndData,
    MessageStartData,
    StreamEndData,
    StreamStartData,
    Usage,
    field_type_errors,
    lifecycle,
)

__all__ = ["OpenAIDecoder", "decode_chunks"]

_REASONING, _CONTENT, _REFUSAL = "reasoning", "content", "refusal"
_TYPE_OF_KIND = {_REASONING: THINKING, _CONTENT: TEXT, _REFUSAL: REFUSAL}


class _DMsg:
    """A message the decoder has open."""

    __slots__ = ("call_id", "chunks", "closed", "index", "message_id", "name", "parts", "type")

    def __init__(self, message_id: str, type_: str) -> None:
        self.message_id = message_id
        self.type = type_
        self.chunks = 0
        self.parts: list[str] = []
        self.closed = False
        self.call_id: str | None = None
        self.name: str | None = None
        self.index: int | None = None


def _opt_str(d: Mapping[str, Any], key: str, where: str) -> str | None:
    v = d.get(key)
    if v is None or isinstance(v, str):
        return v
    raise WireError(f"{where}.{key} must be a string, got {type(v).__name__}")


class OpenAIDecoder(Warnings):
    """``chat.completion.chunk`` dicts in, Messages out (pure; ids from an IdGenerator).

    ``feed(chunk)`` raises WireError for a chunk that is not a chat.completion.chunk and keeps its
    state. ``close(done=...)`` ends the stream: when neither a finish_reason nor ``[DONE]``
    (``done=True``) was seen the stream was cut, so open messages end with status ``error``, an
    error Message says so and stream_end has status ``error``. ``fail(text, code)`` does the same
    for an error the caller saw (HTTP error, timeout).

    Args:
        ids: makes the Messages' ids (None: a fresh IdGenerator).
        stream_events: produce stream_start/stream_end; with False (a writer makes its own)
            finish_reason and usage are read from the attributes.
    """

    def __init__(self, *, ids: IdGenerator | None = None, stream_events: bool = True) -> None:
        super().__init__()
        self.ids = ids or IdGenerator()
        self.stream_events = stream_events
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.model: str | None = None
        self.completion_id: str | None = None
        self.error: str | None = None
        self.finished = False
        self._started = False
        self._cur: _DMsg | None = None
        self._tools_by_id: dict[str, _DMsg] = {}
        self._tools_by_index: dict[int, _DMsg] = {}
        self._open_tools: list[_DMsg] = []
        self._other_choices_warned = False

    # -- public -------------------------------------------------------------------------------
    def feed(self, chunk: Any) -> list[Message]:
        """Decode one chunk dict.

        Args:
            chunk: the decoded JSON of one ``chat.completion.chunk``.

        Raises:
            WireError: it is malformed (nothing is emitted for it).
        """
        if self.finished or self.error is not None:
            self._warn(WarningCode.AFTER_END, "chunk after the stream ended; ignored")
            return []
        if not isinstance(chunk, Mapping):
            raise WireError(f"a chunk must be a JSON object, got {type(chunk).__name__}")
        err = chunk.get("error")
        if err:
            text, code = _error_text(err)
            return self.fail(text, code)
        choices = chunk.get("choices")
        if choices is None:
            choices = []
        elif not isinstance(choices, list):
            raise WireError(f"choices must be a list, got {type(choices).__name__}")
        usage = chunk.get("usage")
        if usage is not None and not isinstance(usage, Mapping):
            raise WireError(f"usage must be an object, got {type(usage).__name__}")
        if usage is not None and (bad := field_type_errors(Usage, usage, "usage")):
            raise WireError(bad[0])  # typed: "lots" or 1.5 is not a token count
        plan = [self._check_choice(c) for c in choices]  # validate everything before emitting
        out: list[Message] = []
        if not self._started:
            self._started = True
            cid = chunk.get("id")
            self.completion_id = cid if isinstance(cid, str) else None
            model = chunk.get("model")
            self.model = model if isinstance(model, str) else None
            if self.stream_events:
                extra: dict[str, Any] = {"model": self.model} if self.model else {}
                data = StreamStartData(request_id=self.completion_id, **extra)
                out.append(self._event(lifecycle(STREAM_START, data)))
        if usage is not None:
            self.usage = dict(usage)
        for item in plan:
            if item is None:
                continue
            reasoning, content, refusal, tool_calls, finish = item
            if reasoning:
                self._text(_REASONING, reasoning, out)
            if content:
                self._text(_CONTENT, content, out)
            if refusal:
                self._text(_REFUSAL, refusal, out)
            for tc in tool_calls:
                self._tool(tc, out)
            if finish is not None:
                self.finish_reason = finish
                self._close_all("completed", out)
        return out

    def close(self, *, done: bool = False) -> list[Message]:
        """End the stream (idempotent): close what is open and emit stream_end.

        Args:
            done: ``[DONE]`` was seen; without it or a finish_reason the stream was cut.
        """
        if self.finished:
            return []
        out: list[Message] = []
        if self.error is None and self.finish_reason is None and not done:
            out += self.fail(
                "the model stream ended before it finished (no finish_reason and no [DONE])",
                "incomplete",
            )
            if self.finished:
                return out
        self._close_all("completed" if self.error is None else "error", out)
        self.finished = True
        if self.stream_events:
            out.append(self._event(self._end_event()))
        return out

    def fail(self, text: str, code: str | None = None) -> list[Message]:
        """An error ends the stream.

        Open messages end with status error, an error Message the user can read follows, and
        ``close`` then reports status error. Nothing streamed before is taken back.

        Args:
            text: what went wrong, for the user.
            code: a machine-readable code (``incomplete``, ``timeout``...).
        """
        if self.finished:
            return []
        out: list[Message] = []
        if not self._started:
            self._started = True
            if self.stream_events:
                out.append(self._event(lifecycle(STREAM_START, StreamStartData())))
        self._close_all("error", out)
        if self.error is None:
            self.error = text
            props: dict[str, Any] = {"message": text}
            if code:
                props["code"] = code
            out.append(
                Message(
                    type=ERROR,
                    props=props,
                    chunk_id=self.ids.chunk(),
                    message_id=self.ids.message(),
                )
            )
        return out

    def end_data(self) -> StreamEndData:
        """stream_end's data as things stand (status, error, usage, finish_reason)."""
        usage = Usage(**self.usage) if self.usage else None
        return StreamEndData(
            request_id=self.completion_id,
            status="error" if self.error is not None else "completed",
            error=self.error,
            usage=usage,
            finish_reason=self.finish_reason,
        )

    # -- internals ----------------------------------------------------------------------------
    def _end_event(self) -> Message:
        return lifecycle(STREAM_END, self.end_data())

    def _event(self, msg: Message) -> Message:
        msg.chunk_id = self.ids.chunk()
        return msg

    def _check_choice(self, choice: Any) -> tuple[Any, ...] | None:
        if not isinstance(choice, Mapping):
            raise WireError(f"a choice must be an object, got {type(choice).__name__}")
        index = choice.get("index", 0)
        if index != 0:
            if not isinstance(index, int):
                raise WireError(f"choices[].index must be an integer, got {index!r}")
            if not self._other_choices_warned:
                self._other_choices_warned = True
                self._warn(
                    WarningCode.OTHER_CHOICE, f"choice {index} ignored: only choice 0 is decoded"
                )
            return None
        delta = choice.get("delta")
        if delta is None:
            delta = {}
        elif not isinstance(delta, Mapping):
            raise WireError(f"delta must be an object, got {type(delta).__name__}")
        reasoning = _opt_str(delta, "reasoning_content", "delta")
        if reasoning is None:
            r = delta.get("reasoning")
            reasoning = r if isinstance(r, str) else None
        content = _opt_str(delta, "content", "delta")
        refusal = _opt_str(delta, "refusal", "delta")
        tcs = delta.get("tool_calls")
        if tcs is None:
            tcs = []
        elif not isinstance(tcs, list):
            raise WireError(f"delta.tool_calls must be a list, got {type(tcs).__name__}")
        tool_calls = []
        for tc in tcs:
            if not isinstance(tc, Mapping):
                raise WireError(f"a tool call must be an object, got {type(tc).__name__}")
            idx = tc.get("index", 0)
            if not isinstance(idx, int) or isinstance(idx, bool):
                raise WireError(f"tool_calls[].index must be an integer, got {idx!r}")
            fn = tc.get("function")
            if fn is None:
                fn = {}
            elif not isinstance(fn, Mapping):
                raise WireError(f"tool_calls[].function must be an object, got {type(fn).__name__}")
            tool_calls.append(
                (
                    idx,
                    _opt_str(tc, "id", "tool_calls[]"),
                    _opt_str(fn, "name", "tool_calls[].function"),
                    _opt_str(fn, "arguments", "tool_calls[].function"),
                )
            )
        finish = choice.get("finish_reason")
        if finish is not None and not isinstance(finish, str):
            raise WireError(f"finish_reason must be a string, got {type(finish).__name__}")
        return reasoning, content, refusal, tool_calls, finish

    def _open(
        self, type_: str, out: list[Message], tool_call: dict[str, Any] | None = None
    ) -> _DMsg:
        m = _DMsg(self.ids.message(), type_)
        out.append(
            self._event(
                lifecycle(
                    MESSAGE_START,
                    MessageStartData(message_id=m.message_id, type=type_, tool_call=tool_call),
                    message_id=m.message_id,
                )
            )
        )
        return m

    def _close(self, m: _DMsg, status: str, out: list[Message]) -> None:
        if m.closed:
            return
        m.closed = True
        extra = {"content": "".join(m.parts)} if m.type != TOOL_CALL else None
        out.append(
            self._event(
                lifecycle(
                    MESSAGE_END,
                    MessageEndData(
                        message_id=m.message_id,
                        type=m.type,
                        chunk_count=m.chunks,
                        status=status,
                        extra=extra,
                    ),
                    message_id=m.message_id,
                )
            )
        )

    def _close_all(self, status: str, out: list[Message]) -> None:
        if self._cur is not None:
            self._close(self._cur, status, out)
            self._cur = None
        for t in self._open_tools:
            self._close(t, status, out)
        self._open_tools = []

    def _text(self, kind: str, s: str, out: list[Message]) -> None:
        type_ = _TYPE_OF_KIND[kind]
        m = self._cur
        if m is None or m.type != type_:
            self._close_all("completed", out)
            m = self._cur = self._open(type_, out)
        m.chunks += 1
        m.parts.append(s)
        out.append(
            Message(
                type=type_,
                props={"content": s},
                delta=True,
                chunk_id=self.ids.chunk(),
                message_id=m.message_id,
            )
        )

    def _tool(self, tc: tuple[int, str | None, str | None, str | None], out: list[Message]) -> None:
        idx, call_id, name, args = tc
        t: _DMsg | None = None
        if call_id:
            t = self._tools_by_id.get(call_id)
        if t is None and not call_id:
            t = self._tools_by_index.get(idx)
        if t is not None and t.closed:
            self._warn(
                WarningCode.LATE_FRAGMENT,
                f"tool call {t.call_id or idx} continued after "
                "it ended; its fragment starts a new tool_call message",
                key=(None, t.message_id),
            )
            t = None
        if t is None:
            if self._cur is not None:
                self._close(self._cur, "completed", out)
                self._cur = None
            prev = self._tools_by_index.get(idx)
            if prev is not None and not prev.closed:  # a server reusing the index: it is done
                self._close(prev, "completed", out)
                self._open_tools.remove(prev)
            t = self._open(TOOL_CALL, out, {"id": call_id, "name": name})
            t.call_id, t.name, t.index = call_id, name, idx
            if call_id:
                self._tools_by_id[call_id] = t
            self._tools_by_index[idx] = t
            self._open_tools.append(t)
            t.chunks += 1
            if args:
                t.parts.append(args)
            out.append(
                Message(
                    type=TOOL_CALL,
                    props={"id": call_id, "name": name, "arguments": args or ""},
                    chunk_id=self.ids.chunk(),
                    message_id=t.message_id,
                )
            )
            return
        self._tools_by_index[idx] = t
        if call_id and t.call_id is None:
            t.call_id = call_id
            self._tools_by_id[call_id] = t
            self._tool_delta(t, "id", call_id, "set", out)
        if name and t.name is None:
            t.name = name
            self._tool_delta(t, "name", name, "set", out)
        if args:
            t.parts.append(args)
            self._tool_delta(t, "arguments", args, "append", out)

    def _tool_delta(
        self, t: _DMsg, field: str, value: str, action: DeltaAction, out: list[Message]
    ) -> None:
        """One tool_call delta chunk: ``action`` (set or append) ``value`` at ``field``."""
        t.chunks += 1
        out.append(
            Message(
                type=TOOL_CALL,
                props={field: value},
                delta=True,
                delta_path=field,
                delta_action=action,
                chunk_id=self.ids.chunk(),
                message_id=t.message_id,
            )
        )


def _error_text(err: Any) -> tuple[str, str | None]:
    if isinstance(err, Mapping):
        msg = err.get("message")
        code = err.get("code") or err.get("type")
        return (
            msg if isinstance(msg, str) and msg else "the model server reported an error",
            str(code) if code is not None else None,
        )
    return str(err), None


def decode_chunks(chunks: Iterable[Any], *, done: bool = True) -> list[Message]:
    """Decode a whole list of chunk dicts (stream_start ... stream_end).

    Args:
        chunks: the decoded ``chat.completion.chunk`` objects, in order.
        done: ``[DONE]`` was seen after them.

    Raises:
        WireError: a malformed chunk.
    """
    dec = OpenAIDecoder()
    out: list[Message] = []
    for c in chunks:
        out += dec.feed(c)
    out += dec.close(done=done)
    return out
