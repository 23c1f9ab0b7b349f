"""An OpenAI Agents SDK agent (a lead calling a researcher agent as a tool) served as a streaming
agent.

    python examples/openai_agents_agent.py                       # serve it (until Ctrl-C)
    python examples/openai_agents_agent.py --once "Tides in Brest?"
    agent-stream serve --app examples/openai_agents_agent.py:lead

Offline by default: the SDK's own ``agents.testing.ScriptedModel`` plays both models (its
script starts over when it runs out). With OPENAI_API_KEY set, ``gpt-4o-mini`` answers instead. The
researcher's words stream live inside the reply (``as_tool(..., on_stream=nested_events)``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from agents.testing import ScriptedModel, assistant_message, function_call

from agent_stream.sources import responder_for
from agent_stream.sources.openai_agents import nested_events
from agents import Agent, set_tracing_disabled

OFFLINE = not os.environ.get("OPENAI_API_KEY")
set_tracing_disabled(OFFLINE)


class Looping(ScriptedModel):
    """A ScriptedModel that starts its script over when it has run out."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__(script)
        self.script = script

    def _refill(self) -> None:
        if not self.remaining_steps:
            self.extend(self.script)

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        self._refill()
        return await super().get_response(*args, **kwargs)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        self._refill()
        return super().stream_response(*args, **kwargs)


lead_model = Looping(
    [
        [function_call("research", {"input": "tides"}, call_id="call_1")],
        [assistant_message("High tide is at six and low tide at noon today.")],
    ]
)
researcher_model = Looping(
    [[assistant_message("Tide tables: high water 06:02, low water 12:15, coefficient 78.")]]
)

researcher = Agent(
    name="researcher",
    instructions="Research the question briefly.",
    model=researcher_model if OFFLINE else "gpt-4o-mini",
)
lead = Agent(
    name="lead",
    instructions="Use the researcher, then answer in one sentence.",
    model=lead_model if OFFLINE else "gpt-4o-mini",
    tools=[researcher.as_tool("research", "Research a question", on_stream=nested_events)],
)


async def once(question: str) -> None:
    from agent_stream import LiveRenderer, StreamWriter

    class Request:  # what a responder reads of a ChatRequest
        text, history, session = question, (), None

    view = LiveRenderer()

    async def sink(msg: Any) -> None:
        view.feed(msg)

    async with StreamWriter(sink) as out:
        await responder_for(lead)(Request(), out)
    view.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--once", metavar="QUESTION", help="answer one question here and exit")
    p.add_argument("--port", type=int, default=8013)
    args = p.parse_args()
    if args.once:
        asyncio.run(once(args.once))
        return
    from agent_stream.uagents import StreamingChat, local_agent, run_agent

    agent = local_agent(
        seed=os.environ.get("AGENT_SEED", "openai agents example agent seed"),
        port=args.port,
        name="openai-agents",
    )
    agent.include(StreamingChat(responder_for(lead)), publish_manifest=True)
    run_agent(agent)


if __name__ == "__main__":
    main()
