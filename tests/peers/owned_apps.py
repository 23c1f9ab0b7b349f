"""Framework apps that keep conversation state, for `agent-stream serve --app` in the tests that
two senders in one session id never share it (tests/integration/test_conversation_owner.py).

- ``approval``: a pydantic-ai agent whose tool needs approval (a paused run);
- ``interrupting``: a LangGraph graph that interrupts for an answer (a paused thread);
- ``remembering``: a LangGraph graph with a checkpointer that answers with every question its
  thread holds (a thread's memory).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import interrupt
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.models.test import TestModel

approval: Agent[None, Any] = Agent(TestModel(), output_type=[str, DeferredToolRequests], name="ops")


@approval.tool_plain(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


async def _ask(state: MessagesState) -> dict[str, Any]:
    answer = interrupt("Send the email to Bob?")
    return {"messages": [AIMessage(content=f"Sent: you said {answer}.")]}


_g = StateGraph(MessagesState)
_g.add_node("ask", _ask)
_g.add_edge(START, "ask")
interrupting = _g.compile(checkpointer=InMemorySaver())


async def _recall(state: MessagesState) -> dict[str, Any]:
    said = [str(m.content) for m in state["messages"] if isinstance(m, HumanMessage)]
    return {"messages": [AIMessage(content="thread holds: " + " | ".join(said))]}


_m = StateGraph(MessagesState)
_m.add_node("recall", _recall)
_m.add_edge(START, "recall")
remembering = _m.compile(checkpointer=InMemorySaver())
