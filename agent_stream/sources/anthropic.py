"""Raw Anthropic Messages stream events as a source: ``client.messages.create(stream=True)``.

    async def ask(request):
        return await client.messages.create(model=..., max_tokens=1024, stream=True,
                                            messages=[{"role": "user", "content": request.text}])

    chat = StreamingChat(responder(ask))

Each ``message_start`` … ``message_stop`` is one block ``llm`` labelled with the model's name;
``thinking`` blocks stream as ``thinking`` messages (their signature kept in the message's
``props.metadata.signature``, redacted thinking in the block's end data, never as text), ``text``
blocks as ``text``, ``tool_use`` / ``server_tool_use`` as ``tool_call`` messages whose
arguments stream as deltas, and server tool results (``*_tool_result`` blocks) as
``tool_result``. Usage is the final ``message_delta``'s figures (input tokens from it, else from
``message_start``; the prompt cache's tokens counted as input), summed over messages. An
``error`` event ends the reply with status error. Events are read duck-typed: the SDK's objects
or plain dicts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_stream.message import REFUSAL, TEXT, THINKING
from agent_stream.sources.emitter import LLM, SourceResponder
from agent_stream.sources.emitter import Emitter as _Emitter
from agent_stream.sources.emitter import field as _field
from agent_stream.sources.emitter import mapped_responder as _mapped_responder
from agent_stream.writer import MessageHandle as _MessageHandle

__all__ = ["EVENT_TYPES", "AnthropicStream", "responder"]

EVENT_TYPES = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
    }
)
# The SDK's MessageStream helper repeats deltas as these convenience events.
_HELPER_EVENTS = frozenset({"text", "thinking", "signature", "input_json", "citation"})


class AnthropicStream:
    """Maps one or more Messages streams into an :class:`Emitter` (see the module doc).

    Args:
        em: the emitter the streams write through.
        label: the llm blocks' label (None: the model's name).
        parent: the key of the block they nest under (None: the reply's top level).
    """

    def __init__(self, em: _Emitter, *, label: str | None = None, parent: Any = None) -> None:
        self.em = em
        self.label = label
        self.parent = parent
        self._n = 0
        self._block: Any = None
        self._kinds: dict[int, str] = {}
        self._input = 0
        self._redacted: list[str] = []
        self._texts: dict[Any, _MessageHandle] = {}  # index -> its open text / thinking message

    def _key(self, index: Any) -> tuple[str, Any, Any]:
        return ("anthropic", self._block, index)

    def fast(self, ev: Any) -> bool:
        """Hold a text or thinking delta of an open message, without a coroutine (nearly every
        event of a backlog); False: ``feed`` the event.

        Args:
            ev: the stream event.
        """
        if not self.em.holding:
            return False
        if type(ev) is dict:
            if ev.get("type") != "content_block_delta":
                return False
            d = ev.get("delta")
            if type(d) is not dict:
                return False
            h = self._texts.get(ev.get("index"))
            kind = d.get("type")
            piece = d.get("text") if kind == "text_delta" else d.get("thinking")
        else:
            if getattr(ev, "type", None) != "content_block_delta":
                return False
            d = ev.delta
            h = self._texts.get(ev.index)
            kind = getattr(d, "type", None)
            piece = getattr(d, "text" if kind == "text_delta" else "thinking", None)
        if h is None:
            return False
        if kind == "text_delta":
            if h.type != TEXT:
                return False
        elif kind != "thinking_delta" or h.type != THINKING:
            return False
        # an ended message holds nothing (hold is False): feed then finds it closed
        return not piece or h.hold(piece)

    async def feed(self, ev: Any) -> None:
        """Map one stream event.

        Args:
            ev: the Messages stream event (a dict or an SDK object).
        """
        em = self.em
        plain = type(ev) is dict
        t = ev.get("type") if plain else getattr(ev, "type", None)
        if t == "content_block_delta":  # nearly every event: the shortest way through
            d, index = (ev.get("delta"), ev.get("index")) if plain else (ev.delta, ev.index)
            kind = _field(d, "type")
            if kind == "text_delta" or kind == "thinking_delta":
                h = em.messages.get(("anthropic", self._block, index))
                piece = _field(d, "text" if kind == "text_delta" else "thinking")
                if h is not None and h.type == (TEXT if kind == "text_delta" else THINKING):
                    if piece and not (em.holding and h.hold(piece)):
                        await h.append(piece)
                    return
            await self._delta(index, d)
        elif t == "message_start":
            msg = _field(ev, "message")
            self._n += 1
            self._block = ("anthropic-message", id(self), self._n)
            self._kinds.clear()
            self._texts.clear()
            self._redacted = []
            self._input = _input_tokens(_field(msg, "usage")) or 0
            model = _field(msg, "model")
            await em.open_block(
                self._block, LLM, self.label or model, parent=self.parent, data={"model": model}
            )
        elif t == "content_block_start":
            await self._start(_field(ev, "index"), _field(ev, "content_block"))
        elif t == "content_block_stop":
            index = _field(ev, "index")
            self._texts.pop(index, None)
            await em.end_message(self._key(index))
        elif t == "message_delta":
            usage = _field(ev, "usage")
            inp = _input_tokens(usage)
            em.add_usage(inp if inp is not None else self._input, _field(usage, "output_tokens", 0))
            reason = _field(_field(ev, "delta"), "stop_reason")
            if reason == "refusal":
                await em.send(self._block, _refusal())
        elif t == "message_stop":
            await self.close()
        elif t == "error":
            err = _field(ev, "error")
            await em.fail(
                f"The model reported an error: {_field(err, 'message', err)}",
                str(_field(err, "type", "model_error")),
            )
        elif t == "ping" or t in _HELPER_EVENTS:
            return
        else:
            em.warn(f"anthropic event {t!r}", "an event type this source does not know")

    async def close(self) -> None:
        if self._block is None:
            return
        await self.em.close_block(self._block)
        self._block = None

    async def _start(self, index: Any, cb: Any) -> None:
        em, key = self.em, self._key(index)
        kind = str(_field(cb, "type"))
        self._kinds[index] = kind
        if kind == "text":
            self._texts[index] = await em.open(key, TEXT, self._block)
            await em.append(key, TEXT, self._block, _field(cb, "text", "") or "")
        elif kind == "thinking":
            self._texts[index] = await em.open(key, THINKING, self._block)
            await em.append(key, THINKING, self._block, _field(cb, "thinking", "") or "")
        elif kind == "redacted_thinking":
            self._redacted.append(str(_field(cb, "data", "")))
            block = em.blocks.get(self._block)
            if block is not None:  # kept for the record, never shown
                block.end_data["metadata"] = {"redacted_thinking": self._redacted}
        elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
            await em.tool_call(key, self._block, _field(cb, "id"), _field(cb, "name"))
            start = _field(cb, "input")
            if start:  # a whole input given up front (not the usual empty {})
                await em.tool_args(key, _json(start))
        elif kind.endswith("_tool_result"):
            em.tool_names.setdefault(str(_field(cb, "tool_use_id")), kind[: -len("_result")])
            await em.tool_result(
                self._block,
                _field(cb, "tool_use_id"),
                None,
                _field(cb, "content"),
                is_error=bool(_field(cb, "is_error", False)),
            )
        else:
            em.warn(f"anthropic content block {kind!r}", "a block type this source does not map")

    async def _delta(self, index: Any, d: Any) -> None:
        em, key = self.em, self._key(index)
        kind = _field(d, "type")
        if kind == "text_delta":
            await em.append(key, TEXT, self._block, _field(d, "text", ""))
        elif kind == "thinking_delta":
            await em.append(key, THINKING, self._block, _field(d, "thinking", ""))
        elif kind == "signature_delta":
            h = await em.open(key, THINKING, self._block)
            await h.merge({"metadata": {"signature": _field(d, "signature", "")}})
        elif kind == "input_json_delta":
            await em.tool_args(key, _field(d, "partial_json", ""))
        elif kind == "citations_delta":
            open_text = em.messages.get(key)
            cit = _field(d, "citation")
            if open_text is not None and cit is not None:
                dump = getattr(cit, "model_dump", None)
                value = dump(mode="json") if callable(dump) else cit
                await open_text.append([value], path="citations")
        else:
            em.warn(f"anthropic delta {kind!r}", "a delta type this source does not map")


def _input_tokens(usage: Any) -> int | None:
    """All the input a call read: ``input_tokens`` does not count the prompt cache's tokens."""
    base = _field(usage, "input_tokens")
    if base is None:
        return None
    cached = (_field(usage, "cache_creation_input_tokens") or 0) + (
        _field(usage, "cache_read_input_tokens") or 0
    )
    return int(base) + int(cached)


def _json(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _refusal() -> Any:
    from agent_stream.message import Message

    return Message(type=REFUSAL, props={"content": "The model declined to answer."})


def responder(stream: Callable[[Any], Any], *, label: str | None = None) -> SourceResponder:
    """A responder for ``StreamingChat`` over a callable ``(request) -> Anthropic stream``.

    Args:
        stream: called with the request; returns (an awaitable of) an async iterable of
            Messages stream events (``client.messages.create(stream=True)``).
        label: the ``llm`` blocks' label (default: the model's name).
    """

    return _mapped_responder(stream, lambda em: AnthropicStream(em, label=label))
