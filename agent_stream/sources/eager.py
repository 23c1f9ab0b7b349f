"""Reading a framework's stream so that a backlog of text deltas goes out as one chunk.

A framework often hands over many events at once (one network read holds dozens of deltas, a
fake model yields without waiting). Sending each delta as a chunk of its own costs the writer,
the sink and every encoder once per token. :func:`eager_events` iterates the stream for an
:class:`~agent_stream.sources.emitter.Emitter`: while the body of the loop runs, the emitter
holds text deltas (:meth:`~agent_stream.writer.MessageHandle.hold`); before the stream would
wait for its next event, what is held is released. So a peer sees text as soon as the
framework stops producing it, batched only while more was already at hand; and anything else
the stream sends (a tool call, an event, a message's end) goes out after the held text, in
order. An event that came after a wait is not held: a framework that waits between all its
events (as pydantic-ai's run does) would only pay for holding and releasing each delta.

Whether the next event is at hand is learned by taking one step of the stream's ``__anext__``
in place: if it finishes, the event was ready; if it yields (it would wait), the held text is
sent, then the step is handed to the event loop exactly as ``await`` would have.
"""

from __future__ import annotations

import types
from collections.abc import AsyncIterable, AsyncIterator, Generator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_stream.sources.emitter import Emitter

__all__ = ["eager_events"]


class _Eager:
    """The async iterator of :func:`eager_events`."""

    __slots__ = ("_em", "_it")

    def __init__(self, em: Emitter, stream: AsyncIterable[Any]) -> None:
        self._em = em
        self._it = stream.__aiter__()

    def __aiter__(self) -> _Eager:
        return self

    def __anext__(self) -> Any:
        self._em.holding = False  # the body is done; nobody holds while the stream is read
        return _step(self._it.__anext__().__await__(), self._em)


def eager_events(em: Emitter, stream: AsyncIterable[Any]) -> AsyncIterator[Any]:
    """Iterate ``stream`` with ``em`` holding text deltas while events are at hand (see the
    module doc).

    Args:
        em: the emitter the loop's body writes through.
        stream: the framework's async iterable of events.
    """
    return _Eager(em, stream)


@types.coroutine
def _step(aw: Generator[Any, Any, Any], em: Emitter) -> Generator[Any, Any, Any]:
    try:
        y = aw.send(None)
    except StopIteration as done:  # the event was at hand: so may the next one be
        em.holding = True
        return done.value
    # The stream waits for its next event: what is held goes out first.
    exc: BaseException | None = None
    if em.out.holds_text:
        try:
            yield from em.out.release().__await__()
        except BaseException as failed:  # cancelled while sending: so is the waiting step
            cancel = getattr(y, "cancel", None)
            if callable(cancel):
                cancel()
            exc = failed
    while True:  # hand the step's pending wait to the event loop, as ``await`` does
        if exc is not None:
            thrown, exc = exc, None
            try:
                y = aw.throw(thrown)
            except StopIteration as done:
                return done.value
        try:
            yield y  # an asyncio task resumes with None (a result is read from its future)
        except GeneratorExit:
            aw.close()
            raise
        except BaseException as failed:
            exc = failed
            continue
        break
    # then the rest of the step, delegated natively; an event after a wait is not held (more
    # may not come)
    return (yield from aw)
