"""Encoder throughput: Messages/s for every wire on one 10,000-delta hierarchical stream.

The stream is written with the StreamWriter: blocks with thinking, tool calls whose arguments
stream in deltas, four parallel threads writing text at once, a structured (custom type) message
growing row by row, and long text; 10,000 content deltas in all, plus the lifecycle events.
Each encoder gets every Message (and then close()) and produces its wire text: OpenAI SSE,
native JSONL, channels JSONL, AG-UI SSE (the ``ag_ui.core`` models plus its ``EventEncoder``),
AG-UI event models alone, and the uAgents chat protocol (ChatMessage models) when present.
Best of REPEAT runs.

Run: python bench/bench_encoders.py
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_stream.adapters import agui, channels, cui, openai
from agent_stream.adapters.agui import AGUIEncoder
from agent_stream.adapters.channels import ChannelsEncoder
from agent_stream.adapters.cui import CUIEncoder
from agent_stream.adapters.framing import Framed
from agent_stream.adapters.openai import OpenAIEncoder
from agent_stream.message import Message, tool_call
from agent_stream.writer import StreamWriter, collect

DELTAS = 10_000
REPEAT = 3
WORDS = (
    "stream ",
    "token ",
    "agent ",
    "the ",
    "model ",
    "answers ",
    "quickly. ",
    "and ",
    "then ",
    "waits ",
)


async def _body(out: StreamWriter) -> None:
    budget = [DELTAS - 11]  # 11 deltas are fixed: 2 per tool call (5) and the table's replace

    def take(n: int) -> int:
        n = min(n, budget[0])
        budget[0] -= n
        return n

    async def llm_block(scope: Any, label: str) -> None:
        async with scope.block("llm", label=label) as b:
            async with b.message("thinking") as m:
                for i in range(take(200)):
                    await m.append(WORDS[i % len(WORDS)])
            async with b.message("tool_call", props={"id": f"call_{label}", "name": "search"}) as m:
                await m.append('{"q": "', path="arguments")
                for i in range(take(48)):
                    await m.append(WORDS[i % len(WORDS)].strip(), path="arguments")
                await m.append('"}', path="arguments")
            await b.send(tool_call(id=f"done_{label}", name="noop", arguments="{}"))

    async def worker(th: Any) -> None:
        await llm_block(th, f"w{th.thread_id}")
        async with th.message("text") as m:
            for i in range(take(1500)):
                await m.append(WORDS[i % len(WORDS)])
                if i % 50 == 0:
                    await asyncio.sleep(0)

    await llm_block(out, "plan")
    await out.parallel(worker, worker, worker, worker)
    async with out.message("table") as m:
        await m.replace({"columns": ["n", "word"], "rows": []})
        for i in range(take(500)):
            await m.append({"n": i, "word": WORDS[i % len(WORDS)]}, path="rows")
    async with out.block("llm", label="final") as b, b.message("text") as m:
        while budget[0]:
            take(1)
            await m.append(WORDS[budget[0] % len(WORDS)])


def build() -> list[Message]:
    return asyncio.run(collect(_body))


def _run(make: Callable[[], Any], msgs: list[Message], timed: bool = False) -> tuple[float, int]:
    best = float("inf")
    items = 0
    for _ in range(REPEAT):
        enc = make()
        t0 = time.perf_counter()
        n = 0
        if timed:
            for i, m in enumerate(msgs):
                n += len(enc.feed(m, i * 0.001))
            n += len(enc.close(len(msgs) * 0.001))
        else:
            for m in msgs:
                n += len(enc.feed(m))
            n += len(enc.close())
        best = min(best, time.perf_counter() - t0)
        items = n
    return best, items


def main() -> None:
    msgs = build()
    deltas = sum(1 for m in msgs if m.delta)
    print(
        f"stream: {len(msgs)} Messages ({deltas} deltas, "
        f"{sum(1 for m in msgs if m.is_lifecycle)} lifecycle events, "
        f"{len({m.thread_id for m in msgs if m.thread_id})} threads); best of {REPEAT}"
    )
    rows: list[tuple[str, Callable[[], Any], bool]] = [
        (
            "openai (SSE)",
            lambda: Framed(OpenAIEncoder(include_usage=True), openai.frame_sse),
            False,
        ),
        ("cui (JSONL)", lambda: Framed(CUIEncoder(), cui.frame_jsonl), False),
        (
            "channels (JSONL)",
            lambda: Framed(
                ChannelsEncoder("text,reasoning,tool,structured,status"), channels.frame_jsonl
            ),
            False,
        ),
        ("agui (SSE)", lambda: Framed(AGUIEncoder(), agui.frame_sse), False),
        ("agui (event models)", lambda: AGUIEncoder(), False),
    ]
    if importlib.util.find_spec("agent_stream.adapters.chat") is not None:
        from agent_stream.adapters.chat import ChatEncoder

        rows.append(
            (
                "chat (ChatMessage)",
                lambda: ChatEncoder("bench", tagged=True, deterministic=True),
                True,
            )
        )
    print(f"{'encoder':<22}{'Messages/s':>14}{'ms total':>11}{'wire items':>12}")
    for name, make, timed in rows:
        secs, items = _run(make, msgs, timed)
        print(f"{name:<22}{len(msgs) / secs:>14,.0f}{secs * 1000:>11.1f}{items:>12,}")


if __name__ == "__main__":
    main()
