"""A pydantic-ai agent (a tool that asks a sub-agent) served as a streaming agent.

    python examples/pydantic_ai_agent.py                        # serve it (until Ctrl-C)
    python examples/pydantic_ai_agent.py --once "Weather in Paris?"
    agent-stream serve --app examples/pydantic_ai_agent.py:agent

Offline by default: pydantic-ai's own FunctionModel streams thinking, a tool call and the answer,
and TestModel plays the sub-agent. With OPENAI_API_KEY set, ``openai:gpt-4o-mini`` answers
instead. The sub-agent runs through ``run_sub_agent`` so its words stream live inside the reply,
in a block of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, DeltaToolCall, FunctionModel
from pydantic_ai.models.test import TestModel

from agent_stream.sources import responder_for
from agent_stream.sources.pydantic_ai import run_sub_agent


async def _offline(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    """Thinks and calls the tool on a new question; answers once the tool has returned."""
    last = messages[-1].parts[-1]
    if getattr(last, "part_kind", "") != "tool-return":
        for piece in ("The user wants ", "the weather; ", "I will ask the tool."):
            yield {0: DeltaThinkingPart(content=piece)}
        yield {1: DeltaToolCall(name="get_weather", json_args='{"city": ', tool_call_id="c1")}
        yield {1: DeltaToolCall(json_args='"Paris"}')}
        return
    for piece in ("It is ", "sunny and ", "24 °C in Paris, ", "says the forecaster."):
        yield piece


def _model() -> Any:
    if os.environ.get("OPENAI_API_KEY"):
        return "openai:gpt-4o-mini"
    return FunctionModel(stream_function=_offline)


forecaster = Agent(TestModel(custom_output_text="Sunny, 24 °C, light wind."), name="forecaster")
agent: Agent[None, str] = Agent(
    _model(), name="weather", instructions="Answer weather questions with the tool."
)


@agent.tool_plain
async def get_weather(city: str) -> str:
    """The weather in a city (asks the forecaster sub-agent)."""
    result = await run_sub_agent(forecaster, f"Forecast for {city}?")
    return str(result.output)


async def once(question: str) -> None:
    from agent_stream import LiveRenderer, StreamWriter

    class Request:  # what a responder reads of a ChatRequest
        text, history, session = question, (), None

    view = LiveRenderer()

    async def sink(msg: Any) -> None:
        view.feed(msg)

    async with StreamWriter(sink) as out:
        await responder_for(agent)(Request(), out)
    view.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--once", metavar="QUESTION", help="answer one question here and exit")
    p.add_argument("--port", type=int, default=8012)
    args = p.parse_args()
    if args.once:
        asyncio.run(once(args.once))
        return
    from agent_stream.uagents import StreamingChat, local_agent
    from agent_stream.uagents import run_agent as serve

    a = local_agent(
        seed=os.environ.get("AGENT_SEED", "pydantic-ai example agent seed"),
        port=args.port,
        name="pydantic-ai",
    )
    a.include(StreamingChat(responder_for(agent)), publish_manifest=True)
    serve(a)


if __name__ == "__main__":
    main()
