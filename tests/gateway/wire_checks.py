"""Checks of what a gateway answered: AG-UI ordering (the rules of @ag-ui/client's verify.ts),
AI SDK chunk pairing, and the real Node clients (verifyEvents, readUIMessageStream) when the
conformance suite's node_modules are installed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ag_ui.core import Event
from pydantic import TypeAdapter

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "conformance" / "node_modules"
EVENT = TypeAdapter(Event)

AGUI_PAIRS = {
    "TEXT_MESSAGE_START": ("text", "messageId", True),
    "TEXT_MESSAGE_CONTENT": ("text", "messageId", None),
    "TEXT_MESSAGE_END": ("text", "messageId", False),
    "TOOL_CALL_START": ("tool", "toolCallId", True),
    "TOOL_CALL_ARGS": ("tool", "toolCallId", None),
    "TOOL_CALL_END": ("tool", "toolCallId", False),
    "STEP_STARTED": ("step", "stepName", True),
    "STEP_FINISHED": ("step", "stepName", False),
    "REASONING_START": ("rspan", "messageId", True),
    "REASONING_END": ("rspan", "messageId", False),
    "REASONING_MESSAGE_START": ("rmsg", "messageId", True),
    "REASONING_MESSAGE_CONTENT": ("rmsg", "messageId", None),
    "REASONING_MESSAGE_END": ("rmsg", "messageId", False),
}


def check_agui(events: list[dict[str, Any]]) -> None:
    """Every event valid for ag_ui.core; RUN_STARTED first; no CONTENT/ARGS/END without its
    START; nothing open at RUN_FINISHED/RUN_ERROR; nothing after it."""
    for e in events:
        EVENT.validate_python(e)
    assert events and events[0]["type"] == "RUN_STARTED", events[:1]
    open_: dict[str, set[str]] = {}
    ended = False
    for e in events[1:]:
        t = e["type"]
        assert not ended, f"{t} after the run ended"
        assert t != "RUN_STARTED", "a second RUN_STARTED"
        if t in AGUI_PAIRS:
            kind, key, opens = AGUI_PAIRS[t]
            ids = open_.setdefault(kind, set())
            if opens is True:
                assert e[key] not in ids, f"{t} for an open id {e[key]}"
                ids.add(e[key])
            else:
                assert e[key] in ids, f"{t} without START: {e[key]}"
                if opens is False:
                    ids.discard(e[key])
        elif t in ("RUN_FINISHED", "RUN_ERROR"):
            still = {k: v for k, v in open_.items() if v}
            assert not still, f"{t} while open: {still}"
            ended = True


def agui_text(events: list[dict[str, Any]], kind: str = "TEXT_MESSAGE_CONTENT") -> str:
    return "".join(e["delta"] for e in events if e["type"] == kind)


def aisdk_text(chunks: list[Any], kind: str = "text-delta") -> str:
    return "".join(c["delta"] for c in chunks if isinstance(c, dict) and c.get("type") == kind)


def node_available() -> bool:
    return (
        shutil.which("node") is not None
        and (NODE_MODULES / "@ag-ui" / "client").is_dir()
        and (NODE_MODULES / "ai").is_dir()
    )


def node_verify(kind: str, items: list[Any]) -> dict[str, Any]:
    """Run tests/gateway/verify_streams.mjs: ``agui`` events through verifyEvents, or ``aisdk``
    chunks through readUIMessageStream. Returns its JSON verdict."""
    script = Path(__file__).resolve().parent / "verify_streams.mjs"
    proc = subprocess.run(
        ["node", str(script), kind],
        input=json.dumps(items),
        text=True,
        capture_output=True,
        timeout=60,
        cwd=ROOT / "conformance",
        env={"NODE_PATH": str(NODE_MODULES), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    verdict: dict[str, Any] = json.loads(proc.stdout)
    return verdict


def node_client(kind: str, url: str, question: str, agent: str, **more: Any) -> dict[str, Any]:
    """The real client over HTTP: ``agui-http`` (@ag-ui/client HttpAgent.runAgent, then
    verifyEvents), ``agui-resume`` (a run that pauses, then one resuming it with ``more``'s
    ``status`` and ``payload``) or ``aisdk-http`` (ai's DefaultChatTransport +
    readUIMessageStream)."""
    script = Path(__file__).resolve().parent / "verify_streams.mjs"
    proc = subprocess.run(
        ["node", str(script), kind, url],
        input=json.dumps({"question": question, "agent": agent, **more}),
        text=True,
        capture_output=True,
        timeout=60,
        cwd=ROOT / "conformance",
        env={"NODE_PATH": str(NODE_MODULES), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    verdict: dict[str, Any] = json.loads(proc.stdout)
    return verdict
