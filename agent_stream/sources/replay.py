"""``replay``: the embedded default model source. A stand-in for a model, not a model.

It needs no key and no network. For each question it picks one of a few bundled replies
(deterministically: by keyword, else by a stable hash of the question) and streams it the way an
agent built on a reasoning model with tools would:

1. a block ``llm`` "Thinking": reasoning (``thinking``) streamed token by token;
2. a block ``tool``: one tool call, a progress line (``loading``) and its result (``tool_result``);
3. two tool calls run in parallel, each in a thread of its own with the same three messages;
4. a block ``llm`` "Answer": a long markdown answer (a list, a table and a code block) streamed
   token by token.

Tokens are BPE-sized (:func:`tokenize`: about four characters, word pieces with their leading
space). ``rate`` is tokens per second (default 60); ``rate=0`` streams as fast as it can and
makes tool calls instant. ``tool_latency`` is a simulated tool's running time at the default rate.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_stream.conversation import Turn
from agent_stream.message import Message, tool_call
from agent_stream.writer import Scope, StreamWriter

__all__ = [
    "REPLIES",
    "ReplayModel",
    "ReplyScript",
    "ToolStep",
    "count_tokens",
    "iter_tokens",
    "pick_reply",
    "recall",
    "tokenize",
]

TOOL_RESULT = "tool_result"
TICK = 0.1  # seconds: a reply wakes at most this often; the tokens due meanwhile go out together
#: Wakes per second all of one model's replies together aim at: with more replies streaming than
#: that many tenths of a second allow, each wakes less often (at most :data:`MAX_TICK` apart) and
#: appends more tokens at a time, so a thousand replies cost the event loop ~3,000 wakes a second
#: (not 10,000) and the writer, chunker and encoder see a third as many deltas.
WAKES = 3000.0
MAX_TICK = 0.5  # seconds: the longest a streaming reply waits between two appends

# GPT-2 style pre-tokenisation (contractions, words with their leading space, numbers, punctuation
# runs, whitespace), then long words cut into pieces of four or five characters.
_PRETOKEN = re.compile(
    r"'(?:s|t|re|ve|m|ll|d)\b| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+| ?_+|\n+|[ \t]+(?!\S)|[ \t]+|.",
    re.DOTALL,
)


WINDOW = 1 << 16  # characters the pre-tokeniser looks at in one call


def iter_tokens(text: str, window: int = WINDOW) -> Iterator[str]:
    """The tokens of ``text`` one by one, lazily; linear in the length of ``text``.

    The pre-tokeniser runs on ``window`` characters at a time (a run of one character class
    longer than that is cut at the window's end), so no step takes long on a huge input.

    Args:
        text: the text.
        window: characters pre-tokenised at a time.

    Yields:
        The tokens, in order.
    """
    pos, n = 0, len(text)
    while pos < n:
        end = min(n, pos + window)
        last: re.Match[str] | None = None
        for m in _PRETOKEN.finditer(text, pos, end):
            if last is not None:
                yield from _pieces(last.group())
            last = m
        assert last is not None  # the pattern matches any character
        if end < n and last.start() > pos:
            pos = last.start()  # the last match may go on past the window: scan it again
        else:
            yield from _pieces(last.group())
            pos = last.end()


def _pieces(piece: str) -> Iterator[str]:
    n = len(piece)
    if n <= 7 or not piece.strip().isalpha():
        yield piece
        return
    i = 5 if piece[0] == " " else 4
    yield piece[:i]
    while n - i > 6:
        yield piece[i : i + 4]
        i += 4
    yield piece[i:]


def tokenize(text: str) -> list[str]:
    """Split ``text`` into BPE-sized tokens; ``"".join(tokenize(t)) == t``.

    Args:
        text: the text.
    """
    return list(iter_tokens(text))


@functools.lru_cache(maxsize=64)
def _tokens(text: str) -> tuple[str, ...]:
    """:func:`tokenize`, remembered: every reply streams one of a few bundled texts, and a
    thousand replies at once would otherwise each hold (and compute) their own token list."""
    return tuple(iter_tokens(text))


async def count_tokens(text: str, slice_size: int = 4096) -> int:
    """``len(tokenize(text))``, letting the event loop run every ``slice_size`` tokens.

    Args:
        text: the text.
        slice_size: tokens counted between two yields to the event loop.
    """
    n = 0
    for _ in iter_tokens(text):
        n += 1
        if n % slice_size == 0:
            await asyncio.sleep(0)
    return n


@dataclass(frozen=True)
class ToolStep:
    """One simulated tool call.

    Attributes:
        name: the tool's name.
        arguments: its JSON arguments.
        progress: its progress line.
        result: its result text.
        latency: its running time, relative to the model's ``tool_latency``.
    """

    name: str
    arguments: dict[str, object]
    progress: str
    result: str
    latency: float = 1.0  # relative running time


@dataclass(frozen=True)
class ReplyScript:
    """A bundled reply: reasoning, one tool step, two parallel tool steps, the answer.

    Attributes:
        key: the script's name.
        keywords: words of a question that pick it.
        thinking: the reasoning text.
        tool: the first tool step.
        parallel: the two tool steps that run side by side.
        answer: the answer text.
        labels: the labels of the two parallel blocks ("": the tool's name).
        extra: free-form texts of the script (the bundled ones have none).
    """

    key: str
    keywords: tuple[str, ...]
    thinking: str
    tool: ToolStep
    parallel: tuple[ToolStep, ToolStep]
    answer: str
    labels: tuple[str, str] = ("", "")
    extra: dict[str, str] = field(default_factory=dict)


_STREAMING_ANSWER = """\
## Streaming agent output, in short

Send the reply **as it is produced**, but not one envelope per token. Group tokens into \
sentences or paragraphs, keep every piece of the reply addressable, and always close what you \
open. Here is what that means in practice.

### What to stream

1. **Reasoning**: useful for debugging, usually hidden from end users. Send it only to peers \
that asked for it.
2. **Tool calls**: a status line is enough (`search_docs` running, then done). The arguments \
and results travel as metadata.
3. **The answer**: the text the user reads. It must stay readable even for a peer that ignores \
streams and metadata entirely.

### Cost of each approach

| Approach | Messages for 2,000 tokens | Time to first text | Readable by a plain peer |
| --- | --- | --- | --- |
| One message at the end | 1 | after the whole reply | yes |
| One message per token | 2,002 | fast, then it falls behind | only if it concatenates |
| Sentence chunks | about 80 | one sentence | yes |

Every envelope is signed and verified, which costs a few milliseconds each. At fifty tokens a \
second, one envelope per token already saturates a loopback connection, while sentence chunks \
leave the link almost idle.

### A minimal streaming responder

```python
async def respond(request, out):
    async with out.block("llm", label="Answer") as block:
        async with block.message("text") as message:
            async for token in model.stream(request.text):
                await message.append(token)
```

The writer numbers messages, blocks and threads, and the transport turns each text message \
into one chat stream: a start, a few sentence-sized chunks and an end. If the model fails \
halfway, every open stream is still ended and the error is delivered as a readable line.

### Checklist

- Acknowledge each incoming message at once; stream from a background task, never from the \
handler itself.
- Flush buffered text on a timer, so a finished sentence never waits for the next token.
- Keep parallel work apart: two tool threads may interleave on the wire, but never inside one \
message.
- End the reply explicitly, so the client knows it is complete.

That is all a peer needs to render the reply live, and all a plain peer needs to read it.
"""

_RECIPE_ANSWER = """\
## A weeknight tomato pasta for four

This takes about **25 minutes** and uses pantry staples. The sauce cooks while the water \
boils, so nothing waits on anything else.

### Ingredients

- 400 g spaghetti or linguine
- 2 tins (800 g) whole peeled tomatoes
- 4 cloves garlic, thinly sliced
- 5 tablespoons olive oil, a pinch of chilli flakes
- A handful of basil, salt, and 40 g grated parmesan

### Steps

1. Bring a large pot of well-salted water to the boil.
2. Warm the oil over medium heat, add the garlic and chilli, and cook until the garlic is pale \
gold, about two minutes. Do not let it brown.
3. Crush the tomatoes by hand into the pan. Simmer for 15 minutes, stirring now and then, \
until the sauce thickens and the oil turns orange.
4. Cook the pasta two minutes short of the packet time. Keep a mug of the cooking water.
5. Toss the pasta in the sauce with a splash of the water until glossy. Finish with basil and \
cheese.

### Timing at a glance

| Minute | Pot | Pan |
| --- | --- | --- |
| 0 | water on | oil, garlic, chilli |
| 3 | heating | tomatoes in, simmer |
| 10 | pasta in | simmering |
| 18 | drain | toss together |

### Scaling it

```text
servings   pasta   tomatoes   garlic
2          200 g   400 g      2 cloves
4          400 g   800 g      4 cloves
8          800 g   1.6 kg     6 cloves
```

Leftover sauce keeps for three days in the fridge and freezes well. If the sauce tastes sharp, \
a small knob of butter rounds it out better than sugar does.
"""

_CODE_ANSWER = """\
## Retrying a flaky HTTP call in Python

Retry only what is safe to retry, back off exponentially with jitter, and give up after a \
bounded total time. The helper below does all three without any extra dependency.

### Which failures to retry

- Connection errors and timeouts: yes, the request may not have reached the server.
- HTTP 429 and 503: yes, and honour `Retry-After` when the server sends it.
- Other 5xx: only for idempotent requests (GET, PUT, DELETE).
- 4xx other than 429: never; the request itself is wrong.

### The helper

```python
import asyncio
import random


async def with_retries(call, *, attempts=5, base=0.2, cap=5.0):
    for attempt in range(1, attempts + 1):
        try:
            return await call()
        except (ConnectionError, TimeoutError):
            if attempt == attempts:
                raise
            delay = min(cap, base * 2 ** (attempt - 1))
            await asyncio.sleep(random.uniform(0, delay))
```

### How the delays grow

| Attempt | Upper bound of the wait | Total worst case |
| --- | --- | --- |
| 1 | 0.2 s | 0.2 s |
| 2 | 0.4 s | 0.6 s |
| 3 | 0.8 s | 1.4 s |
| 4 | 1.6 s | 3.0 s |

"Full jitter" (a uniform wait between zero and the bound) spreads clients out, so a recovering \
server is not hit by every client at the same instant. Log each retry with the attempt number, \
and surface the last exception unchanged so callers can still tell a timeout from a refusal.
"""

_ANSWERS = {"streaming": _STREAMING_ANSWER, "recipe": _RECIPE_ANSWER, "code": _CODE_ANSWER}


def _load_replies() -> tuple[ReplyScript, ...]:
    """The bundled scripts: ``replies.json`` beside this module (answers named by key)."""
    from importlib.resources import files

    def step(d: dict[str, Any]) -> ToolStep:
        return ToolStep(d["name"], d["arguments"], d["progress"], d["result"], d["latency"])

    data = json.loads(files("agent_stream.sources").joinpath("replies.json").read_text("utf-8"))
    return tuple(
        ReplyScript(
            key=r["key"],
            keywords=tuple(r["keywords"]),
            thinking=r["thinking"],
            tool=step(r["tool"]),
            parallel=(step(r["parallel"][0]), step(r["parallel"][1])),
            answer=_ANSWERS[r["answer"]],
            labels=(r["labels"][0], r["labels"][1]),
        )
        for r in data
    )


REPLIES: tuple[ReplyScript, ...] = _load_replies()


PICK_CHARS = 65536  # keywords are looked for in the question's first 64 K characters


def pick_reply(question: str, replies: Sequence[ReplyScript] = REPLIES) -> ReplyScript:
    """The bundled reply for ``question``: the most keywords matched (in its first
    :data:`PICK_CHARS` characters), else a stable hash of the whole question.

    Args:
        question: the question.
        replies: the scripts to pick from.
    """
    words = question[:PICK_CHARS].lower()
    best, score = None, 0
    for r in replies:
        s = sum(1 for k in r.keywords if k in words)
        if s > score:
            best, score = r, s
    if best is not None:
        return best
    return replies[zlib.crc32(question.encode("utf-8")) % len(replies)]


class ReplayModel:
    """Streams a bundled reply into a writer scope at ``rate`` tokens per second.

    Args:
        rate: tokens per second (0: as fast as possible, tool calls instant).
        tool_latency: seconds a simulated tool runs (scaled by each tool's relative latency;
            0 when ``rate`` is 0).
        replies: the scripts to pick from (default :data:`REPLIES`).

    Raises:
        ValueError: ``rate`` is negative, or ``replies`` is empty.
    """

    def __init__(
        self,
        rate: float = 60.0,
        *,
        tool_latency: float = 0.6,
        replies: Sequence[ReplyScript] = REPLIES,
    ) -> None:
        if rate < 0:
            raise ValueError(f"rate must be >= 0 tokens per second, got {rate!r}")
        if not replies:
            raise ValueError("replay needs at least one reply script")
        self.rate = rate
        self.tool_latency = tool_latency if rate > 0 else 0.0
        self.replies = tuple(replies)
        self.running = 0  # replies being streamed now (their wakes share :data:`WAKES`)

    def __repr__(self) -> str:
        return f"ReplayModel(rate={self.rate!r})"

    async def __call__(self, question: str, out: Scope, *, history: Sequence[Turn] = ()) -> None:
        """Stream the reply to ``question`` into ``out``; with the conversation's earlier
        ``history``, the answer begins by saying what was asked before (memory made visible)."""
        self.running += 1
        try:
            await self._reply(question, out, history)
        finally:
            self.running -= 1

    async def _reply(self, question: str, out: Scope, history: Sequence[Turn]) -> None:
        script = pick_reply(question, self.replies)
        run = _Run(self.rate, self.tool_latency, lambda: self.running)
        recalled = recall(history)
        async with out.block("llm", label="Thinking") as b, b.message("thinking") as m:
            if recalled:
                await run.stream(m.append, "The user asked before; I keep that in mind. ")
            await run.stream(m.append, script.thinking)
        async with out.block("tool", label=script.tool.name) as b:
            await run.tool(b, script.tool, "call_1")
        a, c = script.parallel

        async def first(th: Scope) -> None:
            async with th.block("tool", label=a.name) as tb:
                await run.tool(tb, a, "call_2")

        async def second(th: Scope) -> None:
            async with th.block("tool", label=c.name) as tb:
                await run.tool(tb, c, "call_3")

        await out.parallel(
            first, second, labels=[script.labels[0] or a.name, script.labels[1] or c.name]
        )
        async with out.block("llm", label="Answer") as b, b.message("text") as m:
            if recalled:
                await run.stream(m.append, recalled + "\n\n")
            await run.stream(m.append, script.answer)
        if isinstance(out, StreamWriter):
            prompt = await count_tokens(question)
            out.usage = {
                "prompt_tokens": prompt,
                "completion_tokens": run.tokens,
                "total_tokens": prompt + run.tokens,
            }
            out.finish_reason = "stop"


RECALL_CHARS = 120  # of each earlier question quoted by the answer


def _quote(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > RECALL_CHARS:
        text = text[: RECALL_CHARS - 1] + "\u2026"
    return f"\u201c{text}\u201d"


def recall(history: Sequence[Turn]) -> str:
    """What the replay model says about the earlier questions of ``history`` ("" when none):
    the first one and, when there are more, the one just before.

    Args:
        history: the conversation's earlier turns, oldest first.
    """
    asked = [t.text for t in history if t.role == "user"]
    if not asked:
        return ""
    if len(asked) == 1:
        return f"Earlier in this conversation you asked: {_quote(asked[0])}."
    return (
        f"Earlier in this conversation you asked first: {_quote(asked[0])}, and just "
        f"before this: {_quote(asked[-1])} ({len(asked)} questions so far)."
    )


class _Run:
    """Pacing state of one reply."""

    def __init__(
        self, rate: float, tool_latency: float, running: Callable[[], int] = lambda: 1
    ) -> None:
        self.rate = rate
        self.tool_latency = tool_latency
        self._running = running  # replies of the model streaming now
        self.tokens = 0
        self._clock = time.monotonic()
        self._paced = 0

    async def stream(self, append: Callable[[str], Awaitable[None]], text: str) -> None:
        tokens = _tokens(text)
        i, n = 0, len(tokens)
        while i < n:
            k = min(n - i, self._due())
            await append(tokens[i] if k == 1 else "".join(tokens[i : i + k]))
            i += k
            self.tokens += k
            await self._pace(k, last=i >= n)

    def _due(self) -> int:
        """Tokens due now (at least one): the model keeps its average rate without drifting,
        and a reply that fell behind (a busy process) catches up in one append, not one
        event-loop turn per token."""
        if self.rate <= 0:
            return 1
        return max(1, int((time.monotonic() - self._clock) * self.rate) + 1 - self._paced)

    async def _pace(self, appended: int, last: bool = False) -> None:
        before, self._paced = self._paced, self._paced + appended
        if self.rate <= 0:
            if self._paced // 32 > before // 32:
                await asyncio.sleep(0)  # let the transport run
            return
        if last:  # what follows (a tool call, the reply's end) keeps the model's own timeline
            return
        # Sleep until the next token's due time, and at least a tick: TICK (or four tokens'
        # time, when shorter), longer when the model's replies together would wake the loop
        # more than WAKES times a second. The tokens that came due meanwhile go out together.
        delay = self._clock + self._paced / self.rate - time.monotonic()
        tick = max(min(TICK, 4 / self.rate), min(MAX_TICK, self._running() / WAKES))
        await asyncio.sleep(max(delay, tick))

    async def tool(self, scope: Scope, step: ToolStep, call_id: str) -> None:
        await scope.send(
            tool_call(
                id=call_id, name=step.name, arguments=json.dumps(step.arguments, ensure_ascii=False)
            )
        )
        async with scope.message("loading", {"message": step.progress}) as m:
            if self.tool_latency > 0:
                # The tool runs on the model's own timeline (from when its call was due, not
                # from when a busy event loop got here): like a real upstream, the replay does
                # not slow down by the loop's lateness at each step.
                end = self._clock + self._paced / self.rate + self.tool_latency * step.latency
                await asyncio.sleep(max(0.0, end - time.monotonic()))
                if end > self._clock + self._paced / self.rate:  # parallel tools: the latest
                    self._clock, self._paced = end, 0
            await m.merge({"done": True})
        await scope.send(
            Message(
                type=TOOL_RESULT,
                props={"call_id": call_id, "name": step.name, "content": step.result},
            )
        )
