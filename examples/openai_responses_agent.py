"""An OpenAI Responses stream (reasoning summary, text) served as a streaming agent.

    python examples/openai_responses_agent.py                  # serve it (until Ctrl-C)
    python examples/openai_responses_agent.py --once "Name three moons of Jupiter."
    agent-stream serve --app examples/openai_responses_agent.py:ask

``ask(request)`` returns the stream of ``client.responses.create(stream=True)``; the source
tells it is a Responses stream from its events. With OPENAI_API_KEY set, the model answers (the
session's history included); offline, a recorded stream of the same event shapes is replayed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

from agent_stream.sources import responder_for

MODEL = os.environ.get("OPENAI_MODEL", "gpt-5-mini")


async def _recorded(question: str) -> AsyncIterator[dict[str, Any]]:
    """The events of a real reasoning model's stream, replayed at a reading pace."""
    response = {"id": "resp_offline", "object": "response", "model": MODEL, "output": []}
    yield {"type": "response.created", "sequence_number": 0, "response": response}
    yield {
        "type": "response.output_item.added",
        "sequence_number": 1,
        "output_index": 0,
        "item": {"id": "rs_1", "type": "reasoning", "summary": []},
    }
    for i, piece in enumerate(("Jupiter has ", "95 known moons; ", "pick the Galilean ones.")):
        await asyncio.sleep(0.05)
        yield {
            "type": "response.reasoning_summary_text.delta",
            "sequence_number": 2 + i,
            "item_id": "rs_1",
            "output_index": 0,
            "summary_index": 0,
            "delta": piece,
        }
    yield {
        "type": "response.output_item.done",
        "sequence_number": 5,
        "output_index": 0,
        "item": {"id": "rs_1", "type": "reasoning", "summary": []},
    }
    yield {
        "type": "response.output_item.added",
        "sequence_number": 6,
        "output_index": 1,
        "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
    }
    for i, piece in enumerate(("Io, ", "Europa ", "and Ganymede.")):
        await asyncio.sleep(0.05)
        yield {
            "type": "response.output_text.delta",
            "sequence_number": 7 + i,
            "item_id": "msg_1",
            "output_index": 1,
            "content_index": 0,
            "delta": piece,
        }
    yield {
        "type": "response.output_item.done",
        "sequence_number": 10,
        "output_index": 1,
        "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
    }
    yield {
        "type": "response.completed",
        "sequence_number": 11,
        "response": {
            **response,
            "usage": {"input_tokens": 14, "output_tokens": 52, "total_tokens": 66},
        },
    }


async def ask(request: Any) -> Any:
    """The model stream for one chat request (its history, then its question)."""
    if not os.environ.get("OPENAI_API_KEY"):
        return _recorded(request.text)
    from openai import AsyncOpenAI

    items: Any = [{"role": t.role, "content": t.text} for t in request.history]
    items.append({"role": "user", "content": request.text})
    return await AsyncOpenAI().responses.create(
        model=MODEL, stream=True, input=items, reasoning={"summary": "auto"}
    )


async def once(question: str) -> None:
    from agent_stream import LiveRenderer, StreamWriter

    class Request:  # what a responder reads of a ChatRequest
        text, history, session = question, (), None

    view = LiveRenderer()

    async def sink(msg: Any) -> None:
        view.feed(msg)

    async with StreamWriter(sink) as out:
        await responder_for(ask)(Request(), out)
    view.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--once", metavar="QUESTION", help="answer one question here and exit")
    p.add_argument("--port", type=int, default=8015)
    args = p.parse_args()
    if args.once:
        asyncio.run(once(args.once))
        return
    from agent_stream.uagents import StreamingChat, local_agent, run_agent

    agent = local_agent(
        seed=os.environ.get("AGENT_SEED", "openai responses example seed"),
        port=args.port,
        name="responses",
    )
    agent.include(StreamingChat(responder_for(ask)), publish_manifest=True)
    run_agent(agent)


if __name__ == "__main__":
    main()
