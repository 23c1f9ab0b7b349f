"""A LangGraph agent (a tool-calling graph with a research subgraph) served as a streaming agent.

    python examples/langgraph_agent.py                       # serve it (until Ctrl-C)
    python examples/langgraph_agent.py --once "Weather in Paris?"   # one reply, printed here
    agent-stream serve --app examples/langgraph_agent.py:graph      # the same graph via the CLI

Offline by default: LangChain's own fake chat models answer. With OPENAI_API_KEY set and
``langchain-openai`` installed, ``gpt-4o-mini`` answers instead. The graph has a checkpointer, so
each chat session is a LangGraph thread: it remembers, and an ``interrupt`` would ask the user.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_stream_writer
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agent_stream.sources import responder_for


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    get_stream_writer()(f"Looking up the weather in {city}")
    return f"Sunny and 24 °C in {city}."


class _OfflineModel(FakeMessagesListChatModel):
    """Calls the tool, then answers; over and over (the fake needs bind_tools to accept tools)."""

    def bind_tools(self, tools: Any, **kw: Any) -> _OfflineModel:
        return self


def _model() -> Any:
    if os.environ.get("OPENAI_API_KEY"):
        try:
            from langchain_openai import ChatOpenAI

            return ChatOpenAI(model="gpt-4o-mini", streaming=True).bind_tools([get_weather])
        except ImportError:
            pass
    return _OfflineModel(
        responses=[
            AIMessage(
                content="",
                tool_calls=[{"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}}],
                usage_metadata={"input_tokens": 42, "output_tokens": 9, "total_tokens": 51},
            ),
            AIMessage(
                content="It is sunny and 24 °C in Paris: a fine day for a walk.",
                usage_metadata={"input_tokens": 70, "output_tokens": 14, "total_tokens": 84},
            ),
        ]
    )


def build_graph() -> Any:
    model = _model()

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    async def research(state: MessagesState) -> dict[str, Any]:
        notes = GenericFakeChatModel(messages=iter(["Paris in spring: mild, often sunny."]))
        return {"messages": [await notes.ainvoke(state["messages"])]}

    sub = StateGraph(MessagesState)
    sub.add_node("notes", research)
    sub.add_edge(START, "notes")
    g = StateGraph(MessagesState)
    g.add_node("research", sub.compile())
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([get_weather]))
    g.add_edge(START, "research")
    g.add_edge("research", "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=InMemorySaver())


graph = build_graph()


async def once(question: str) -> None:
    from agent_stream import LiveRenderer, StreamWriter

    class Request:  # what a responder reads of a ChatRequest
        text, history, session = question, (), "once"

    view = LiveRenderer()

    async def sink(msg: Any) -> None:
        view.feed(msg)

    async with StreamWriter(sink) as out:
        await responder_for(graph)(Request(), out)
    view.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--once", metavar="QUESTION", help="answer one question here and exit")
    p.add_argument("--port", type=int, default=8011)
    args = p.parse_args()
    if args.once:
        asyncio.run(once(args.once))
        return
    from agent_stream.uagents import StreamingChat, local_agent, run_agent

    agent = local_agent(
        seed=os.environ.get("AGENT_SEED", "langgraph example agent seed"),
        port=args.port,
        name="langgraph",
    )
    agent.include(StreamingChat(responder_for(graph)), publish_manifest=True)
    run_agent(agent)


if __name__ == "__main__":
    main()
