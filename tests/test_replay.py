"""The replay model: BPE-sized lossless tokens, the bundled reply's shape, pacing."""

from __future__ import annotations

import asyncio
import gc
import itertools
import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stream.assemble import assemble
from agent_stream.sources import make_source
from agent_stream.sources.replay import REPLIES, ReplayModel, pick_reply, tokenize
from agent_stream.writer import collect


@settings(max_examples=200)
@given(st.text())
def test_tokenize_is_lossless(text: str) -> None:
    assert "".join(tokenize(text)) == text


def test_tokens_are_bpe_sized() -> None:
    for r in REPLIES:
        toks = tokenize(r.answer)
        assert 3.0 <= len(r.answer) / len(toks) <= 4.5
        assert max(len(t.strip()) for t in toks) <= 8 or "\n" in max(toks, key=len)


def test_every_bundled_reply_has_list_table_code_and_is_long() -> None:
    for r in REPLIES:
        assert "\n- " in r.answer or "\n1. " in r.answer
        assert "\n| --- |" in r.answer
        assert "\n```" in r.answer
        assert len(tokenize(r.answer)) >= 400


def test_pick_reply_is_deterministic() -> None:
    assert pick_reply("how do agents stream tokens").key == "streaming"
    assert pick_reply("a pasta recipe for dinner").key == "recipe"
    q = "zzz qqq"
    assert pick_reply(q) is pick_reply(q)


def _run(model: ReplayModel, question: str = "stream"):  # type: ignore[no-untyped-def]
    return asyncio.run(collect(lambda out: model(question, out)))


def test_reply_shape_thinking_tool_block_two_parallel_threads_then_the_answer() -> None:
    t = assemble(_run(ReplayModel(rate=0)))
    assert t.status == "completed"
    blocks = [(b.type, b.label) for b in t.blocks]
    assert blocks[0] == ("llm", "Thinking") and blocks[-1] == ("llm", "Answer")
    assert blocks[1][0] == "tool"
    assert len(t.threads) == 2 and all(th.status == "completed" for th in t.threads)
    types = [m.type for m in t.messages]
    assert types[0] == "thinking" and types[-1] == "text"
    assert types.count("tool_call") == 3
    assert {m.thread_id for m in t.messages if m.type == "tool_call"} == {None, "T1", "T2"}
    assert t.text() == pick_reply("stream").answer
    usage = t.stream_data["usage"]
    assert usage["completion_tokens"] > 400 and t.stream_data["finish_reason"] == "stop"


def test_rate_paces_tokens_and_zero_is_as_fast_as_possible() -> None:
    start = time.monotonic()
    _run(ReplayModel(rate=0))
    fast = time.monotonic() - start
    n = len(tokenize(REPLIES[0].answer)) + len(tokenize(REPLIES[0].thinking))
    start = time.monotonic()
    _run(ReplayModel(rate=3000, tool_latency=0))
    paced = time.monotonic() - start
    assert fast < 0.5
    assert paced >= n / 3000 * 0.9


def _content(x: Any) -> Any:
    """A transcript's dict without its timings (``duration_ms``): what a reply says and how it is
    structured, which two runs of the same reply share; how long each part took they do not."""
    if isinstance(x, dict):
        return {k: _content(v) for k, v in x.items() if k != "duration_ms"}
    if isinstance(x, list):
        return [_content(v) for v in x]
    return x


async def test_concurrent_replies_do_not_share_state() -> None:
    model = make_source("replay", rate=0)
    alone = await collect(lambda out: model("stream", out))
    a, b = await asyncio.gather(
        collect(lambda out: model("stream", out)), collect(lambda out: model("stream", out))
    )
    want = _content(assemble(alone).to_dict())
    assert want["messages"] and want["blocks"] and want["threads"]
    assert _content(assemble(a).to_dict()) == want
    assert _content(assemble(b).to_dict()) == want


def _reference_tokenize(text: str) -> list[str]:
    """The tokeniser as first written (quadratic in the length of a word): the behaviour kept."""
    from agent_stream.sources.replay import _PRETOKEN

    out: list[str] = []
    for m in _PRETOKEN.finditer(text):
        piece = m.group()
        if len(piece) <= 7 or not piece.strip().isalpha():
            out.append(piece)
            continue
        head = 5 if piece[0] == " " else 4
        out.append(piece[:head])
        rest = piece[head:]
        while len(rest) > 6:
            out.append(rest[:4])
            rest = rest[4:]
        out.append(rest)
    return out


@settings(max_examples=300)
@given(st.text())
def test_tokenize_is_unchanged(text: str) -> None:
    assert tokenize(text) == _reference_tokenize(text)


@settings(max_examples=300)
@given(st.lists(st.text(max_size=20), max_size=40).map(" ".join))
def test_a_small_window_tokenizes_like_one_pass_when_no_run_is_longer(text: str) -> None:
    from agent_stream.sources.replay import iter_tokens

    assert list(iter_tokens(text, window=64)) == _reference_tokenize(text)


async def test_a_2_mb_one_word_question_never_blocks_the_event_loop_for_long() -> None:
    gaps: list[float] = []
    done = False

    async def ticker() -> None:
        # CPU time of this thread between ticks: what ran without yielding (time the machine
        # gave to other processes does not count against it)
        last = time.thread_time()
        while not done:
            await asyncio.sleep(0.002)
            now = time.thread_time()
            gaps.append(now - last)
            last = now

    model = ReplayModel(rate=0)
    # The heap the earlier tests left is not the model's: a full collection of it (0.1-0.2 s
    # here) landing in a measured gap failed this test by chance.
    gc.collect()
    gc.freeze()
    try:
        for question in ("x" * 2_000_000, "é" * 2_000_000, "ab1." * 500_000):
            gaps.clear()
            done = False
            tick = asyncio.create_task(ticker())
            await asyncio.sleep(0.01)
            started = time.thread_time()  # CPU time: the machine's load does not count
            t = assemble(await collect(lambda out, q=question: model(q, out)))  # type: ignore[misc]
            took = time.thread_time() - started
            done = True
            await tick
            assert t.status == "completed" and took < 3.0  # linear: 2 MB take well under 1 s of CPU
            assert max(gaps) < 0.05, f"the event loop ran {max(gaps):.3f} s of CPU without yielding"
    finally:
        gc.unfreeze()
    from agent_stream.sources.replay import count_tokens

    assert await count_tokens("How do agents stream?") == len(tokenize("How do agents stream?"))


async def test_a_paced_reply_keeps_its_rate_wakes_at_most_every_tick_and_catches_up_at_once() -> (
    None
):
    from agent_stream.sources.replay import TICK, _Run

    text = " word" * 40  # 40 tokens
    appends: list[tuple[float, str]] = []

    async def append(piece: str) -> None:
        appends.append((time.monotonic(), piece))

    run = _Run(rate=40.0, tool_latency=0)
    start = time.monotonic()
    await run.stream(append, text)
    took = time.monotonic() - start
    assert "".join(p for _, p in appends) == text and run.tokens == 40
    assert 39 / 40 * 0.9 <= took <= 39 / 40 + 0.5  # the rate, not faster, not far slower
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(appends)]
    assert min(gaps) >= TICK * 0.9  # about ten wakes for 40 tokens, not 40
    assert len(appends) <= took / TICK + 2

    # a reply whose process was busy for a second sends what came due in one append
    late: list[str] = []

    async def stall_once(piece: str) -> None:
        late.append(piece)
        if len(late) == 1:
            time.sleep(1.0)  # the whole event loop held up, as under load

    run = _Run(rate=40.0, tool_latency=0)
    await run.stream(stall_once, text)
    assert "".join(late) == text
    assert len(late[1]) >= len(" word") * 30  # the ~40 tokens due after the stall, together


async def test_many_replies_streaming_at_once_wake_less_often_each_and_keep_their_rate() -> None:
    """A model streaming many replies spreads WAKES over them: each wakes less often (never
    more than MAX_TICK apart) and appends more tokens at a time, at the same average rate."""
    from agent_stream.sources.replay import MAX_TICK, TICK, WAKES, _Run

    text = " word" * 60  # 60 tokens
    for running, tick in ((1, TICK), (int(WAKES * 0.3), 0.3), (int(WAKES * 10), MAX_TICK)):
        appends: list[float] = []

        async def append(piece: str, appends: list[float] = appends) -> None:
            appends.append(time.monotonic())

        run = _Run(rate=100.0, tool_latency=0, running=lambda running=running: running)
        start = time.monotonic()
        await run.stream(append, text)
        took = time.monotonic() - start
        assert run.tokens == 60
        gaps = [b - a for a, b in itertools.pairwise(appends)]
        assert min(gaps) >= min(tick, 4 / 100) * 0.9 if running == 1 else min(gaps) >= tick * 0.9
        assert len(appends) <= took / min(tick, 4 / 100 if running == 1 else tick) + 2
        assert took <= 59 / 100 + tick + 0.3  # the rate is kept: a late tick catches up


async def test_the_model_counts_the_replies_it_streams() -> None:
    from agent_stream.writer import StreamWriter

    model = ReplayModel(rate=0)
    seen: list[int] = []

    async def sink(m: Any) -> None:
        seen.append(model.running)

    async def one() -> None:
        async with StreamWriter(sink) as w:
            await model("q", w)

    await asyncio.gather(one(), one(), one())
    assert max(seen) == 3 and model.running == 0


def test_a_busy_loop_at_each_tool_does_not_slow_the_replay_down() -> None:
    """The model keeps its own timeline, as a real upstream does: the loop being late when a
    tool call goes out eats into the tool's latency instead of adding to the reply's time."""
    model = ReplayModel(rate=2000, tool_latency=0.6)

    async def timed(stall: float) -> float:
        async def sink(m: Any) -> None:
            if m.type == "tool_call":
                time.sleep(stall)  # the whole event loop held up, as under load

        from agent_stream.writer import StreamWriter

        start = time.monotonic()
        async with StreamWriter(sink) as w:
            await model("stream", w)
        return time.monotonic() - start

    alone = asyncio.run(timed(0.0))
    busy = asyncio.run(timed(0.25))  # three tool calls: 0.75 s of stalls, all inside tools
    assert busy - alone < 0.3, (alone, busy)
