"""AG-UI interrupts end to end: `@ag-ui/client`'s own HttpAgent, a real gateway (`agent-stream
gateway`) and real agents (`agent-stream serve --app`), all on 127.0.0.1: a pydantic-ai agent
whose tool needs approval, and a LangGraph graph that interrupts with a question. The first run
ends RUN_FINISHED with the interrupt outcome (naming the tool call; a form's response schema);
the client refuses to start another run while it is unanswered; its resume (a new run on the
same thread) runs the tool when resolved and refuses it when cancelled, and answers the graph's
question with the payload. Every run passes the client's verifyEvents."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from gateway_harness import Gateway, Harness, start_gateway
from wire_checks import node_available, node_client

pytest.importorskip("pydantic_ai")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not node_available(), reason="conformance/node_modules not installed"),
]

APP = """
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.models.test import TestModel

approval: Agent[None, Any] = Agent(TestModel(), output_type=[str, DeferredToolRequests], name="ops")


@approval.tool_plain(requires_approval=True)
def delete_file(path: str) -> str:
    '''Delete a file.'''
    return f"deleted {path}"
"""


@pytest.fixture(scope="module")
def approval_gateway(
    gw_harness: Harness, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    """`serve --app approval_app.py:approval --name ops-agui` and a gateway in front of it."""
    app = tmp_path_factory.mktemp("agui-hitl") / "approval_app.py"
    app.write_text(textwrap.dedent(APP), encoding="utf-8")
    server, _, _ = gw_harness.serve("--app", f"{app}:approval", "--name", "ops-agui")
    gw = start_gateway(gw_harness, "--agent", "ops-agui")
    try:
        yield gw
    finally:
        gw.proc.stop()
        server.stop()


GRAPH = """
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import interrupt


async def ask(state: MessagesState) -> dict[str, Any]:
    answer = interrupt("Send the email to Bob?")
    return {"messages": [AIMessage(content=f"Sent: you said {answer}.")]}


g = StateGraph(MessagesState)
g.add_node("ask", ask)
g.add_edge(START, "ask")
graph = g.compile(checkpointer=InMemorySaver())
"""


@pytest.fixture(scope="module")
def graph_gateway(
    gw_harness: Harness, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    """`serve --app graph_app.py:graph --name mail-agui` and a gateway in front of it."""
    pytest.importorskip("langgraph")
    app = tmp_path_factory.mktemp("agui-graph") / "graph_app.py"
    app.write_text(textwrap.dedent(GRAPH), encoding="utf-8")
    server, _, _ = gw_harness.serve("--app", f"{app}:graph", "--name", "mail-agui")
    gw = start_gateway(gw_harness, "--agent", "mail-agui")
    try:
        yield gw
    finally:
        gw.proc.stop()
        server.stop()


def _of(run: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in run["events"] if e["type"] == kind]


def _round_trip(gw: Gateway, status: str, payload: Any = None) -> dict[str, Any]:
    more: dict[str, Any] = {"status": status}
    if payload is not None:
        more["payload"] = payload
    verdict = node_client("agui-resume", f"{gw.url}/agui", "delete a", "ops-agui", **more)
    assert verdict["ok"], verdict
    asked: dict[str, Any] = verdict["runs"][0]
    resumed: dict[str, Any] = verdict["runs"][1]
    assert len(verdict["runs"]) == 2
    [finished] = _of(asked, "RUN_FINISHED")
    assert finished["outcome"]["type"] == "interrupt"
    [intr] = finished["outcome"]["interrupts"]
    [call] = _of(asked, "TOOL_CALL_START")
    assert intr["reason"] == "tool_approval" and intr["toolCallId"] == call["toolCallId"]
    assert call["toolCallName"] == "delete_file" and "delete_file" in intr["message"]
    assert asked["pending"] == [intr["id"]] and resumed["pending"] == []
    assert verdict["unanswered_refused"] is True
    return resumed


def test_a_resolved_interrupt_runs_the_approved_tool(approval_gateway: Gateway) -> None:
    resumed = _round_trip(approval_gateway, "resolved")
    assert [r["content"] for r in _of(resumed, "TOOL_CALL_RESULT")] == ["deleted a"]
    [finished] = _of(resumed, "RUN_FINISHED")
    assert finished["outcome"] == {"type": "success"}


def test_a_cancelled_interrupt_refuses_the_tool(approval_gateway: Gateway) -> None:
    resumed = _round_trip(approval_gateway, "cancelled")
    assert "deleted a" not in [r["content"] for r in _of(resumed, "TOOL_CALL_RESULT")]
    [finished] = _of(resumed, "RUN_FINISHED")
    assert finished["outcome"] == {"type": "success"}


def test_a_graphs_question_is_answered_by_the_resume_payload(graph_gateway: Gateway) -> None:
    verdict = node_client(
        "agui-resume",
        f"{graph_gateway.url}/agui",
        "email Bob",
        "mail-agui",
        status="resolved",
        payload={"answer": "yes"},
    )
    assert verdict["ok"], verdict
    asked: dict[str, Any] = verdict["runs"][0]
    resumed: dict[str, Any] = verdict["runs"][1]
    [finished] = _of(asked, "RUN_FINISHED")
    [intr] = finished["outcome"]["interrupts"]
    assert intr["reason"] == "input_required" and intr["message"] == "Send the email to Bob?"
    assert intr["responseSchema"]["required"] == ["answer"] and "toolCallId" not in intr
    assert verdict["unanswered_refused"] is True
    said = "".join(e["delta"] for e in _of(resumed, "TEXT_MESSAGE_CONTENT"))
    assert "Sent: you said yes." in said
    assert _of(resumed, "RUN_FINISHED")[0]["outcome"] == {"type": "success"}
