"""A callable ``(request) -> stream`` as a source, whatever raw model stream it returns.

The stream is (an awaitable of) an async iterable of one of: Anthropic Messages stream events,
OpenAI Responses stream events, OpenAI chat-completion chunks or LiteLLM chunks (which have the
chat-completion shape). Which one is told by the first event itself, duck-typed (objects or
dicts; LiteLLM is never imported):

- ``type`` ``message_start`` (or another Anthropic event) -> :mod:`.anthropic`;
- ``type`` ``response.*`` -> :mod:`.openai_responses`;
- ``choices`` (``object`` ``chat.completion.chunk``) -> the chat-completions decoder, one block
  ``llm`` labelled with the model, usage from the final chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_stream.sources.anthropic import EVENT_TYPES, AnthropicStream
from agent_stream.sources.emitter import (
    LLM,
    Emitter,
    SourceResponder,
    aclose,
    drive,
    field,
    resolve,
)
from agent_stream.sources.openai_responses import ResponsesStream
from agent_stream.writer import Scope

__all__ = ["ChatChunks", "kind_of", "responder"]


def kind_of(event: Any) -> str | None:
    """``anthropic``, ``responses`` or ``chat`` for a stream's first event; None if unknown.

    Args:
        event: the stream's first event (a dict or an SDK object).
    """
    t = field(event, "type")
    if isinstance(t, str):
        if t.startswith("response."):
            return "responses"
        if t in EVENT_TYPES:
            return "anthropic"
    if not isinstance(event, dict):
        try:
            event = _as_dict(event)
        except TypeError:
            return None
    if event.get("choices") is not None or event.get("object") == "chat.completion.chunk":
        return "chat"
    return None


def _as_dict(chunk: Any) -> dict[str, Any]:
    if isinstance(chunk, dict):
        return chunk
    for name in ("model_dump", "to_dict", "dict"):
        fn = getattr(chunk, name, None)
        if callable(fn):
            try:
                d = fn()
            except Exception:
                continue
            if isinstance(d, dict):
                return d
    raise TypeError(f"a chat-completion chunk that is not a mapping: {type(chunk).__name__}")


class ChatChunks:
    """Chat-completion (and LiteLLM) chunks into one block ``llm`` per stream.

    Args:
        em: the emitter the chunks write through.
        label: the block's label (None: the model's name).
    """

    def __init__(self, em: Emitter, *, label: str | None = None) -> None:
        from agent_stream.adapters.openai import OpenAIDecoder
        from agent_stream.sources.openai import _Feeder

        self.em = em
        self.label = label
        self.dec = OpenAIDecoder(stream_events=False)
        self._feeder_cls = _Feeder
        self._feeder: Any = None

    async def feed(self, chunk: Any) -> None:
        """Map one chunk.

        Args:
            chunk: the chat-completion chunk (a dict or an SDK object).
        """
        d = _as_dict(chunk)
        if self._feeder is None:
            block = await self.em.open_block(
                ("chat", id(self)),
                LLM,
                self.label or d.get("model"),
                data={"model": d.get("model")},
            )
            self._feeder = self._feeder_cls(block)
        for m in self.dec.feed(d):
            await self._feeder.put(m)

    async def close(self) -> None:
        if self._feeder is None:
            return
        for m in self.dec.close(done=True):
            await self._feeder.put(m)
        await self._feeder.end_all("completed")
        u = self.dec.usage
        if u:
            self.em.add_usage(
                u.get("prompt_tokens"), u.get("completion_tokens"), u.get("total_tokens")
            )
        await self.em.close_block(("chat", id(self)))


def responder(stream: Callable[[Any], Any], *, label: str | None = None) -> SourceResponder:
    """A responder for ``StreamingChat`` over a callable ``(request) -> raw model stream``.

    Args:
        stream: called with the request (its ``text``, ``history``, ``session``); returns (an
            awaitable of) an async iterable of Anthropic, Responses, chat-completion or LiteLLM
            stream events.
        label: the ``llm`` blocks' label (default: the model's name).
    """

    async def respond(request: Any, out: Scope) -> None:
        em = Emitter(out)

        async def run() -> None:
            events = await resolve(stream(request))
            mapper: Any = None
            fast: Any = None
            try:
                async for ev in em.events(events):
                    if fast is not None and fast(ev):
                        continue
                    if mapper is None:
                        kind = kind_of(ev)
                        if kind == "anthropic":
                            mapper = AnthropicStream(em, label=label)
                        elif kind == "responses":
                            mapper = ResponsesStream(em, label=label)
                        elif kind == "chat":
                            mapper = ChatChunks(em, label=label)
                        else:
                            raise TypeError(
                                "the stream's first event is none of an Anthropic event, a "
                                "Responses event or a chat-completion chunk: "
                                f"{type(ev).__name__} {str(ev)[:80]}"
                            )
                        fast = getattr(mapper, "fast", None)
                    await mapper.feed(ev)
            finally:
                await aclose(events)
            if mapper is not None:
                await mapper.close()

        await drive(em, run)

    return respond
