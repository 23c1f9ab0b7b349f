"""An agent_stream agent whose responder fails midway: it streams reasoning, a tool call and part
of an answer (the last sentence unfinished, so the chunker still holds it), then raises.

Prints ``address: ...`` and ``endpoint: ...`` once it listens. Public API only.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from agent_stream.message import tool_call
from agent_stream.uagents import ChatRequest, StreamingChat, local_agent, run_agent
from agent_stream.writer import StreamWriter

PARTIAL = "The first sentence arrives whole. The second one is cut off by the crash"


class ModelCrashed(RuntimeError):
    pass


async def respond(request: ChatRequest, out: StreamWriter) -> None:
    async with out.block("llm", label="Answer") as b:
        async with b.message("thinking") as m:
            await m.append("I will answer, then fail.")
        await b.send(tool_call(id="c1", name="lookup", arguments="{}"))
        async with b.message("text") as m:
            for word in PARTIAL.split(" "):
                await m.append(word + " ")
                await asyncio.sleep(0)
            raise ModelCrashed("model crashed midway")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seed", required=True)
    args = p.parse_args()
    agent = local_agent(args.seed, args.port, name="failing")
    agent.include(StreamingChat(respond, channels={"reasoning"}), publish_manifest=True)
    print(f"address: {agent.address}", flush=True)
    print(f"endpoint: http://127.0.0.1:{args.port}/submit", flush=True)
    run_agent(agent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
