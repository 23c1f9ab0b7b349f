"""What a framework source costs: per framework, tokens/s of the framework's own stream consumed
alone, through the source (StreamWriter, a sink that keeps nothing), and through the source and
the chat encoder (ChatEncoder, as StreamingChat sends it), in the same run.

- LangGraph: a one-node graph whose GenericFakeChatModel streams N tokens, consumed with
  ``astream(stream_mode=["messages", "updates", "custom"], subgraphs=True)``;
- pydantic-ai: a FunctionModel streaming N tokens, consumed with ``run_stream_events``;
- OpenAI Agents SDK: OpenAIChatCompletionsModel against a local server streaming N chunks;
- Anthropic / OpenAI Responses: the SDK clients against a local server streaming N deltas.

The model server runs in a child process, so CPU time (``time.process_time``) is this process's
work only: the framework's (and its HTTP client's) alone, then with the source added. Each of
``--runs`` rounds runs the three arms (alone, source, source + encoder) back to back, in an
order rotated from round to round; tokens/s are from each arm's median CPU time, and the
overhead is the median over rounds of one round's ratio (source / alone - 1), so that a round
slowed by another process on the machine slows its arms alike.

The model server sends its whole reply at once, so the framework has a backlog of events to
read: the sources then hold consecutive text deltas and send them as one chunk before they
wait for more (``agent_stream.sources.eager``). Where a framework waits between its events
anyway (pydantic-ai hands each event over from its own task), every delta is a chunk of its own.

Before the rounds, what the frameworks have loaded is moved out of the collector's reach
(``gc.freeze()``): a full collection otherwise walks every object of every framework, and
whichever arm it lands in looks slower.

    python bench/bench_sources.py [--tokens 4000] [--runs 15] [--only langgraph,anthropic]

Target: the source adds at most 15% CPU to the framework's own stream. Exit status 1 when a
source's text differs from the framework's or a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from agent_stream.adapters.chat.encoder import ChatEncoder
from agent_stream.message import Message
from agent_stream.sources import responder_for
from agent_stream.sources.emitter import SourceResponder
from agent_stream.sources.replay import tokenize
from agent_stream.writer import StreamWriter

FILLER = (
    "Framework sources stream every token of a model's reply into blocks and messages, "
    "and a chat peer sees the words as they come, not one final answer at the end. "
)
TARGET = 0.15

SERVER = r"""
import sys
from aiohttp import web
bodies = {k: open(p, "rb").read() for k, p in (a.split("=", 1) for a in sys.argv[2:])}

async def handle(request):
    await request.read()
    kind = next(k for k in bodies if request.path.endswith(k))
    resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(bodies[kind])
    await resp.write_eof()
    return resp

app = web.Application()
app.router.add_route("POST", "/{tail:.*}", handle)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
"""


class Request:
    """What a responder reads of a ChatRequest."""

    def __init__(self, text: str) -> None:
        self.text, self.history, self.session = text, (), None


def sse(frames: Sequence[tuple[str | None, dict[str, Any]]], done: bool = False) -> bytes:
    out = [(f"event: {n}\n" if n else "") + f"data: {json.dumps(d)}\n\n" for n, d in frames]
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def anthropic_body(tokens: list[str]) -> bytes:
    f: list[tuple[str | None, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-bench",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    f += [
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
        )
        for t in tokens
    ]
    f += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"input_tokens": 10, "output_tokens": len(tokens)},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return sse(f)


def responses_body(tokens: list[str]) -> bytes:
    resp = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-bench",
        "status": "in_progress",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    item = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    f: list[tuple[str | None, dict[str, Any]]] = [
        (None, {"type": "response.created", "sequence_number": 0, "response": resp}),
        (
            None,
            {
                "type": "response.output_item.added",
                "sequence_number": 1,
                "output_index": 0,
                "item": item,
            },
        ),
    ]
    f += [
        (
            None,
            {
                "type": "response.output_text.delta",
                "sequence_number": 2 + i,
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": t,
                "logprobs": [],
            },
        )
        for i, t in enumerate(tokens)
    ]
    n = len(tokens) + 2
    done = {
        **item,
        "status": "completed",
        "content": [{"type": "output_text", "text": "".join(tokens), "annotations": []}],
    }
    f += [
        (
            None,
            {
                "type": "response.output_item.done",
                "sequence_number": n,
                "output_index": 0,
                "item": done,
            },
        ),
        (
            None,
            {
                "type": "response.completed",
                "sequence_number": n + 1,
                "response": {
                    **resp,
                    "status": "completed",
                    "output": [done],
                    "usage": {
                        "input_tokens": 10,
                        "output_tokens": len(tokens),
                        "total_tokens": 10 + len(tokens),
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens_details": {"reasoning_tokens": 0},
                    },
                },
            },
        ),
    ]
    return sse(f)


def chat_body(tokens: list[str]) -> bytes:
    def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-bench",
            "choices": []
            if delta is None
            else [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    f = [
        (None, chunk({"role": "assistant", "content": t} if i == 0 else {"content": t}))
        for i, t in enumerate(tokens)
    ]
    f.append((None, chunk({}, "stop")))
    last = chunk(None)
    last["usage"] = {
        "prompt_tokens": 10,
        "completion_tokens": len(tokens),
        "total_tokens": 10 + len(tokens),
    }
    f.append((None, last))
    return sse(f, done=True)


# -- per framework: (alone, app) -----------------------------------------------------------------
Alone = Callable[[], Awaitable[str]]


def langgraph_case(tokens: list[str], url: str) -> tuple[Alone, Any]:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import HumanMessage
    from langgraph.graph import START, MessagesState, StateGraph

    class Tokens(GenericFakeChatModel):
        async def _astream(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> AsyncIterator[Any]:
            from langchain_core.messages import AIMessageChunk
            from langchain_core.outputs import ChatGenerationChunk

            for t in tokens:
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=t, id="run-bench"))
                if run_manager is not None:
                    await run_manager.on_llm_new_token(t, chunk=chunk)
                yield chunk

    model = Tokens(messages=iter(()))

    async def node(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("model", node)
    g.add_edge(START, "model")
    graph = g.compile()

    async def alone() -> str:
        out: list[str] = []
        stream: Any = graph.astream(
            {"messages": [HumanMessage("go")]},
            stream_mode=["messages", "updates", "custom"],
            subgraphs=True,
        )
        async for _ns, mode, data in stream:
            if mode == "messages" and isinstance(data[0].content, str):
                out.append(data[0].content)
        return "".join(out)

    return alone, graph


def pydantic_ai_case(tokens: list[str], url: str) -> tuple[Alone, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel

    async def stream_fn(messages: Any, info: Any) -> AsyncIterator[str]:
        for t in tokens:
            yield t

    agent = Agent(FunctionModel(stream_function=stream_fn), name="bench")

    async def alone() -> str:
        async with agent.run_stream_events("go") as events:
            last = None
            async for ev in events:
                last = ev
        return str(last.result.output)  # type: ignore[union-attr]

    return alone, agent


def openai_agents_case(tokens: list[str], url: str) -> tuple[Alone, Any]:
    from openai import AsyncOpenAI

    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled

    set_tracing_disabled(True)
    model = OpenAIChatCompletionsModel(
        model="gpt-bench",
        openai_client=AsyncOpenAI(base_url=url + "/v1", api_key="x", max_retries=0),
    )
    agent = Agent(name="bench", model=model)

    async def alone() -> str:
        result = Runner.run_streamed(agent, "go")
        async for _ in result.stream_events():
            pass
        return str(result.final_output)

    return alone, agent


def anthropic_case(tokens: list[str], url: str) -> tuple[Alone, Any]:
    from anthropic import AsyncAnthropic

    client = AsyncAnthropic(base_url=url, api_key="x", max_retries=0)

    async def ask(request: Any) -> Any:
        return await client.messages.create(
            model="claude-bench",
            max_tokens=10,
            stream=True,
            messages=[{"role": "user", "content": "go"}],
        )

    async def alone() -> str:
        out = []
        async for ev in await ask(None):
            if ev.type == "content_block_delta":
                out.append(ev.delta.text)
        return "".join(out)

    return alone, ask


def responses_case(tokens: list[str], url: str) -> tuple[Alone, Any]:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url + "/v1", api_key="x", max_retries=0)

    async def ask(request: Any) -> Any:
        return await client.responses.create(model="gpt-bench", input="go", stream=True)

    async def alone() -> str:
        out = []
        async for ev in await ask(None):
            if ev.type == "response.output_text.delta":
                out.append(ev.delta)
        return "".join(out)

    return alone, ask


CASES = {
    "langgraph": langgraph_case,
    "pydantic-ai": pydantic_ai_case,
    "openai-agents": openai_agents_case,
    "anthropic": anthropic_case,
    "openai-responses": responses_case,
}


async def through(respond: SourceResponder, encode: bool) -> str:
    """One reply through the source's responder (and the chat encoder); returns its text."""
    texts: list[str] = []
    if encode:
        enc = ChatEncoder("bench", tagged=True)

        async def sink(m: Message) -> None:
            enc.feed(m, time.monotonic())
            if m.type == "text" and m.delta:
                texts.append(m.props["content"] if m.props else "")
    else:

        async def sink(m: Message) -> None:
            if m.type == "text" and m.delta:
                texts.append(m.props["content"] if m.props else "")

    async with StreamWriter(sink) as out:
        await respond(Request("go"), out)
    return "".join(texts)


async def cpu(fn: Callable[[], Awaitable[str]]) -> tuple[float, str]:
    gc.collect()
    t0 = time.process_time()
    text = await fn()
    return time.process_time() - t0, text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def bench(names: list[str], n: int, runs: int, url: str) -> bool:
    tokens = tokenize(FILLER * (n // 20 + 1))[:n]
    ok = True
    print(
        f"{'framework':<18}{'alone tok/s':>13}{'source tok/s':>14}{'+chat tok/s':>13}"
        f"{'source CPU':>12}{'+chat CPU':>11}"
    )
    for name in names:
        alone, app = CASES[name](tokens, url)
        respond = responder_for(app)  # built once, as an agent serving it does
        await alone()  # warm up both paths once
        await through(respond, True)
        gc.collect()
        gc.freeze()
        arms: list[Callable[[], Awaitable[str]]] = [
            alone,
            lambda: through(respond, False),  # noqa: B023
            lambda: through(respond, True),  # noqa: B023
        ]
        times: list[list[float]] = [[], [], []]
        for r in range(runs):
            texts = [""] * 3
            for i in (r % 3, (r + 1) % 3, (r + 2) % 3):
                t, texts[i] = await cpu(arms[i])
                times[i].append(t)
            if not (texts[0] == texts[1] == texts[2] == "".join(tokens)):
                print(f"  {name}: the texts differ", file=sys.stderr)
                ok = False
        a, s, c = times
        ma, ms, mc = (statistics.median(x) for x in times)
        over_s = statistics.median(y / x - 1 for x, y in zip(a, s, strict=True))
        over_c = statistics.median(y / x - 1 for x, y in zip(a, c, strict=True))
        print(
            f"{name:<18}{n / ma:>13,.0f}{n / ms:>14,.0f}{n / mc:>13,.0f}"
            f"{over_s:>+11.1%}{over_c:>+11.1%}"
        )
        if over_s > TARGET:
            ok = False
    print(f"target: the source adds <= {TARGET:.0%} CPU to the framework's own stream")
    return ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=4000)
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--only", default=",".join(CASES))
    args = p.parse_args()
    names = [x for x in args.only.split(",") if x]
    unknown = [x for x in names if x not in CASES]
    if unknown:
        p.error(f"unknown framework(s): {', '.join(unknown)} (known: {', '.join(CASES)})")
    tokens = tokenize(FILLER * (args.tokens // 20 + 1))[: args.tokens]
    with tempfile.TemporaryDirectory() as d:
        files = {}
        for kind, body in (
            ("/messages", anthropic_body(tokens)),
            ("/responses", responses_body(tokens)),
            ("/chat/completions", chat_body(tokens)),
        ):
            path = Path(d) / (kind.strip("/").replace("/", "_") + ".sse")
            path.write_bytes(body)
            files[kind] = str(path)
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(port), *(f"{k}={v}" for k, v in files.items())],
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            ok = asyncio.run(bench(names, args.tokens, args.runs, f"http://127.0.0.1:{port}"))
        finally:
            server.terminate()
            server.wait(5)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
