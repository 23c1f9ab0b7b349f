"""An AI SDK approval round trip end to end: `agent-stream serve --app` runs a pydantic-ai agent
whose tool needs approval, `agent-stream gateway` fronts it, and the client is ai 6's own chat
code (AbstractChat, what useChat is built on, with ``sendAutomaticallyWhen:
lastAssistantMessageIsCompleteWithApprovalResponses``), run by tests/gateway/aisdk_approval.mjs.
The tool part waits for the user's decision; approving runs the tool (its output shown),
refusing denies it; all in one assistant message, real processes on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from gateway_harness import Harness, start_gateway
from wire_checks import NODE_MODULES, ROOT, node_available

pytest.importorskip("pydantic_ai")
pytestmark = pytest.mark.integration

APP = Path(__file__).resolve().parents[1] / "peers" / "owned_apps.py"


@pytest.fixture(scope="module")
def approval_gateway(gw_harness: Harness) -> Any:
    """`serve --app owned_apps.py:approval --name ops` and a gateway in front of it."""
    server, _, _ = gw_harness.serve("--app", f"{APP}:approval", "--name", "ops")
    gw = start_gateway(gw_harness, "--agent", "ops")
    try:
        yield gw
    finally:
        gw.proc.stop()
        server.stop()


def chat_round_trip(url: str, decision: str) -> dict[str, Any]:
    script = Path(__file__).resolve().parent / "aisdk_approval.mjs"
    proc = subprocess.run(
        ["node", str(script), url + "/api/chat", "ops", "delete the file a", decision],
        text=True,
        capture_output=True,
        timeout=120,
        cwd=ROOT / "conformance",
        env={"NODE_PATH": str(NODE_MODULES), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    got: dict[str, Any] = json.loads(proc.stdout)
    return got


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_use_chat_approves_or_denies_the_paused_tool(approval_gateway: Any, decision: str) -> None:
    if not node_available():
        pytest.skip("the conformance suite's node_modules are not installed (make conformance)")
    got = chat_round_trip(approval_gateway.url, decision)
    assert got["ok"], got
    asked = got["asked"]
    assert asked is not None, got  # the tool part waited for the user's decision
    assert asked["input"] == {"path": "a"}
    # the decision was sent by the chat itself, and answered in the same assistant message
    assert got["requests"] == 2 and got["messages"] == 2 and got["status"] == "ready"
    [tool] = [p for p in got["parts"] if p.get("toolCallId") == asked["toolCallId"]]
    assert tool["approval"]["id"] == asked["approvalId"]
    texts = "".join(p.get("text", "") for p in got["parts"] if p["type"] == "text")
    if decision == "approve":
        assert tool["state"] == "output-available" and tool["output"] == "deleted a"
        assert "deleted a" in texts
    else:
        assert tool["state"] == "output-denied"
        assert "The user refused: keep it" in texts
    assert got["metadata"]["model"] == "test" and got["metadata"]["usage"]["total_tokens"] > 0


def test_an_ai5_client_answers_the_pause_by_typing(approval_gateway: Any) -> None:
    """ai 5 gets the pause as a data-user_input part; the next message of the chat answers it."""
    import httpx

    headers = {"x-ai-sdk-version": "5"}
    asked = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "delete a"}]}]
    with httpx.Client(base_url=approval_gateway.url, timeout=60, headers=headers) as http:
        r = http.post("/api/chat", json={"id": "typed", "messages": asked})
        assert r.status_code == 200 and '"type":"data-user_input"' in r.text
        assert "tool-approval-request" not in r.text
        said = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "yes"}]}
        r = http.post("/api/chat", json={"id": "typed", "messages": [*asked, said]})
    assert r.status_code == 200 and "deleted a" in r.text
