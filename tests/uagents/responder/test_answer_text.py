"""AnswerText keeps what a reply said (its text messages' text) while skipping everything else
the responder writes: for any stream without a type change into text it equals what the whole
Assembler says, and a message that becomes text counts from its change on."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stream.assemble import Assembler
from agent_stream.message import Message
from agent_stream.sources import make_source
from agent_stream.uagents.responder._reply_text import AnswerText
from agent_stream.writer import StreamWriter


async def written(program: Any) -> list[Message]:
    got: list[Message] = []

    async def sink(m: Message) -> None:
        got.append(m)

    async with StreamWriter(sink) as out:
        await program(out)
    return got


def both(msgs: list[Message]) -> tuple[str, str]:
    whole, answer = Assembler(), AnswerText()
    for m in msgs:
        whole.feed(m)
        answer.feed(m)
    return whole.transcript.text(), answer.text()


def test_the_replay_models_answers_are_kept_whole() -> None:
    model = make_source("replay", rate=0)
    for question in ("How do agents stream?", "A pesto recipe, please", "retry with backoff"):
        msgs = asyncio.run(written(lambda out, q=question: model(q, out)))
        whole, kept = both(msgs)
        assert kept == whole and len(kept) > 100


# A program: steps of (kind, thread, pieces) written into blocks, threads interleaved.
STEP = st.tuples(
    st.sampled_from(["text", "thinking", "tool_call", "whole", "loading"]),
    st.integers(0, 2),
    st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=4),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(STEP, max_size=12))
def test_any_stream_without_a_change_into_text_gives_the_assemblers_text(steps: Any) -> None:
    async def program(out: StreamWriter) -> None:
        threads = [out, out.thread("a"), out.thread("b")]
        for kind, t, pieces in steps:
            scope = threads[t]
            async with scope.block("llm") as b:
                if kind == "whole":
                    await b.text("".join(pieces))
                elif kind == "loading":
                    async with b.message("loading", {"message": pieces[0]}) as m:
                        await m.merge({"done": True})
                else:
                    async with b.message(kind) as m:
                        for p in pieces:
                            await m.append(p)

    whole, kept = both(asyncio.run(written(program)))
    assert kept == whole


def test_a_message_that_becomes_text_counts_from_the_change() -> None:
    async def program(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            async with b.message("thinking") as m:
                await m.append("hidden reasoning ")
                await m.change_type("text", {"content": ""})
                await m.append("The answer.")
            async with b.message("text") as m:
                await m.append(" More.")
                await m.change_type("thinking")  # no longer text: dropped from the answer
            async with b.message("text") as m:
                await m.append(" End.")

    _, kept = both(asyncio.run(written(program)))
    assert kept == "The answer. End."
