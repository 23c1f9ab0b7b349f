"""OpenAI Responses stream events as a source: ``client.responses.create(stream=True)``.

    async def ask(request):
        return await client.responses.create(model="gpt-5", input=request.text, stream=True)

    chat = StreamingChat(responder(ask))

Each ``response.created`` … ``response.completed`` is one block ``llm`` labelled with the model's
name (or ``label``); reasoning (summary or full text) streams as ``thinking``, output text as
``text``, refusals as ``refusal``, each ``function_call`` item as a ``tool_call`` message (id and
name from ``output_item.added``, arguments from ``function_call_arguments.delta``). Usage is
``response.completed``'s (or ``incomplete``'s), summed over responses; ``response.failed`` and
``error`` end the reply with status error. The OpenAI Agents SDK source uses the same mapper for
its raw model events.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from agent_stream.message import REFUSAL, TEXT, THINKING
from agent_stream.sources.emitter import LLM, SourceResponder
from agent_stream.sources.emitter import Emitter as _Emitter
from agent_stream.sources.emitter import field as _field
from agent_stream.sources.emitter import mapped_responder as _mapped_responder

__all__ = ["ResponsesStream", "responder"]

# Events that only repeat what the deltas carried, or mark progress with nothing to show.
_QUIET = frozenset(
    {
        "response.in_progress",
        "response.queued",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.refusal.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.done",
        "response.function_call_arguments.done",
        "response.output_text.annotation.added",
    }
)


class ResponsesStream:
    """Maps Responses stream events into an :class:`Emitter` (see the module doc).

    Args:
        em: the emitter the stream writes through.
        label: the llm blocks' label (None: the model's name).
        parent: the key of the block they nest under (None: the reply's top level).
        data: more block_start data of the llm blocks.
    """

    def __init__(
        self,
        em: _Emitter,
        *,
        label: str | None = None,
        parent: Hashable | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        self.em = em
        self.label = label
        self.parent = parent
        self.data = data or {}
        self.block: Hashable | None = None
        self._n = 0
        self._args: set[Hashable] = set()

    async def open(self, model: Any = None) -> Hashable:
        """The llm block of the current response (opened when none is).

        Args:
            model: the response's model (its block's ``model``, and its label without ``label``).
        """
        if self.block is None:
            self._n += 1
            self.block = ("responses", id(self), self._n)
            await self.em.open_block(
                self.block,
                LLM,
                self.label or model,
                parent=self.parent,
                data={"model": model, **self.data},
            )
        return self.block

    async def close(self, status: str = "completed") -> None:
        """End the current response's llm block (nothing when none is open).

        Args:
            status: the block's end status.
        """
        if self.block is not None:
            await self.em.close_block(self.block, status)
            self.block = None

    def _key(self, ev: Any, kind: str) -> tuple[Any, ...]:
        # by output index: converted chat-completion streams give every item the same id
        index = _field(ev, "output_index")
        return (
            "responses",
            self.block,
            index if index is not None else _field(ev, "item_id"),
            kind,
        )

    def fast(self, ev: Any) -> bool:
        """Hold a text delta of an open message, without a coroutine (nearly every event of a
        backlog); False: ``feed`` the event.

        Args:
            ev: the stream event.
        """
        if not self.em.holding or self.block is None:
            return False
        if _field(ev, "type") != "response.output_text.delta":
            return False
        h = self.em.messages.get(self._key(ev, TEXT))
        delta = _field(ev, "delta")
        return h is not None and (not delta or h.hold(delta))

    async def feed(self, ev: Any) -> None:
        """Map one stream event.

        Args:
            ev: the Responses stream event.
        """
        t = str(_field(ev, "type"))
        em = self.em
        if t == "response.output_text.delta":  # nearly every event: first
            await em.append(
                self._key(ev, TEXT), TEXT, self.block or await self.open(), _field(ev, "delta")
            )
        elif t == "response.created":
            await self.open(_field(_field(ev, "response"), "model"))
        elif t in ("response.completed", "response.incomplete"):
            usage = _field(_field(ev, "response"), "usage")
            if usage is not None:
                em.add_usage(
                    _field(usage, "input_tokens"),
                    _field(usage, "output_tokens"),
                    _field(usage, "total_tokens"),
                )
            await self.close()
        elif t == "response.failed":
            err = _field(_field(ev, "response"), "error")
            await em.fail(
                f"The model reported an error: {_field(err, 'message', err)}",
                str(_field(err, "code", "model_error") or "model_error"),
            )
        elif t == "error":
            await em.fail(
                f"The model reported an error: {_field(ev, 'message')}",
                str(_field(ev, "code", "model_error") or "model_error"),
            )
        elif t == "response.output_item.added":
            await self._item_added(ev)
        elif t == "response.output_item.done":
            await self._item_done(ev)
        elif t in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            await em.append(
                self._key(ev, THINKING), THINKING, await self.open(), _field(ev, "delta")
            )
        elif t == "response.refusal.delta":
            await em.append(self._key(ev, REFUSAL), REFUSAL, await self.open(), _field(ev, "delta"))
        elif t == "response.function_call_arguments.delta":
            key = self._key(ev, "call")
            self._args.add(key)
            await em.tool_args(key, _field(ev, "delta"))
        elif t in _QUIET:
            return
        else:
            em.warn(f"responses event {t!r}", "an event type this source does not map")

    async def _item_added(self, ev: Any) -> None:
        item = _field(ev, "item")
        kind = _field(item, "type")
        if kind == "function_call":
            block = await self.open()
            await self.em.tool_call(
                self._key(ev, "call"),
                block,
                _field(item, "call_id"),
                _field(item, "name"),
                _field(item, "arguments") or "",
            )
        elif kind not in ("message", "reasoning"):
            self.em.warn(f"responses item {kind!r}", "an output item this source does not map")

    async def _item_done(self, ev: Any) -> None:
        em, item = self.em, _field(ev, "item")
        kind = _field(item, "type")
        if kind == "function_call":
            key = self._key(ev, "call")
            if not em.has(key):  # only the finished item was sent
                await em.tool_call(
                    key,
                    await self.open(),
                    _field(item, "call_id"),
                    _field(item, "name"),
                    _field(item, "arguments") or "",
                )
            elif key not in self._args and _field(item, "arguments"):
                await em.tool_args(key, _field(item, "arguments"))
            await em.end_message(key)
        for kind in (TEXT, THINKING, REFUSAL):
            await em.end_message(self._key(ev, kind))


def responder(stream: Callable[[Any], Any], *, label: str | None = None) -> SourceResponder:
    """A responder for ``StreamingChat`` over a callable ``(request) -> Responses stream``.

    Args:
        stream: called with the request; returns (an awaitable of) an async iterable of
            Responses stream events (``client.responses.create(stream=True)``).
        label: the ``llm`` blocks' label (default: the model's name).
    """

    return _mapped_responder(stream, lambda em: ResponsesStream(em, label=label))
