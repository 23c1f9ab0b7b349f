"""Claude's raw Messages stream (thinking, text, tool use) served as a streaming agent.

    python examples/anthropic_agent.py                       # serve it (until Ctrl-C)
    python examples/anthropic_agent.py --once "Why is the sky blue?"
    agent-stream serve --app examples/anthropic_agent.py:ask

``ask(request)`` returns the stream of ``client.messages.create(stream=True)``; the source tells
it is Anthropic's from its events. With ANTHROPIC_API_KEY set, Claude answers (the session's
history included); offline, a recorded stream of the same event shapes is replayed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

from agent_stream.sources import responder_for

MODEL = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5")


async def _recorded(question: str) -> AsyncIterator[dict[str, Any]]:
    """The events of a real stream with extended thinking, replayed at a reading pace."""
    yield {
        "type": "message_start",
        "message": {
            "id": "msg_offline",
            "model": MODEL,
            "usage": {"input_tokens": 18, "output_tokens": 1},
        },
    }
    yield {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    }
    for piece in ("Rayleigh scattering: ", "short wavelengths ", "scatter more."):
        await asyncio.sleep(0.05)
        yield {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": piece},
        }
    yield {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "signature_delta", "signature": "EqQBCkYIBxgCKkD..."},
    }
    yield {"type": "content_block_stop", "index": 0}
    yield {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}
    for piece in (
        "Sunlight is scattered by air molecules, ",
        "and blue light, with its ",
        "shorter wavelength, is scattered the most: ",
        "so the sky looks blue.",
    ):
        await asyncio.sleep(0.05)
        yield {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": piece},
        }
    yield {"type": "content_block_stop", "index": 1}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"input_tokens": 18, "output_tokens": 61},
    }
    yield {"type": "message_stop"}


async def ask(request: Any) -> Any:
    """The model stream for one chat request (its history, then its question)."""
    if not os.environ.get("ANTHROPIC_API_KEY"):
        return _recorded(request.text)
    from anthropic import AsyncAnthropic

    messages: Any = [
        {"role": t.role, "content": t.text}
        for t in request.history
        if t.role in ("user", "assistant")
    ]
    messages.append({"role": "user", "content": request.text})
    return await AsyncAnthropic().messages.create(
        model=MODEL,
        max_tokens=2048,
        stream=True,
        messages=messages,
        thinking={"type": "enabled", "budget_tokens": 1024},
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
    p.add_argument("--port", type=int, default=8014)
    args = p.parse_args()
    if args.once:
        asyncio.run(once(args.once))
        return
    from agent_stream.uagents import StreamingChat, local_agent, run_agent

    agent = local_agent(
        seed=os.environ.get("AGENT_SEED", "anthropic example agent seed"),
        port=args.port,
        name="claude",
    )
    agent.include(StreamingChat(responder_for(ask)), publish_manifest=True)
    run_agent(agent)


if __name__ == "__main__":
    main()
