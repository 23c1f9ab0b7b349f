"""A reader of the AI SDK UI message stream, by the rules of the ``ai`` package's
``processUIMessageStream`` (ported): every chunk checked, and the UI message a client builds."""

from __future__ import annotations

import json
from typing import Any

from agent_stream.adapters.aisdk import DONE

__all__ = ["CHUNK_TYPES", "UIReader", "read"]

CHUNK_TYPES = {
    "start",
    "finish",
    "abort",
    "error",
    "start-step",
    "finish-step",
    "text-start",
    "text-delta",
    "text-end",
    "reasoning-start",
    "reasoning-delta",
    "reasoning-end",
    "tool-input-start",
    "tool-input-delta",
    "tool-input-available",
    "tool-input-error",
    "tool-output-available",
    "tool-output-error",
    "tool-output-denied",
    "tool-approval-request",
    "source-url",
    "source-document",
    "message-metadata",
    "file",
}


class UIReader:
    """What ``readUIMessageStream`` does with the chunks, throwing where it throws."""

    def __init__(self) -> None:
        self.parts: list[dict[str, Any]] = []
        self.text: dict[str, dict[str, Any]] = {}
        self.reasoning: dict[str, dict[str, Any]] = {}
        self.partial: dict[str, str] = {}
        self.errors: list[str] = []
        self.finish: str | None = None
        self.metadata: Any = None
        self.aborted = False
        self.done = False
        self.step_open = False

    def tool(self, cid: str) -> dict[str, Any]:
        found = [p for p in self.parts if p.get("toolCallId") == cid]
        assert found, f"no tool invocation for {cid}"
        return found[-1]

    def read(self, c: Any) -> None:
        assert not self.done, f"{c} after [DONE]"
        if c == DONE:
            self.done = True
            return
        t = c["type"]
        assert t in CHUNK_TYPES or t.startswith("data-"), t
        assert isinstance(c, dict) and json.loads(json.dumps(c)) == c
        if t in ("text-start", "reasoning-start"):
            active = self.text if t == "text-start" else self.reasoning
            part = {"type": t[:-6], "text": "", "state": "streaming"}
            active[c["id"]] = part
            self.parts.append(part)
        elif t.endswith("-delta") and t != "tool-input-delta":
            active = self.text if t == "text-delta" else self.reasoning
            assert c["id"] in active, f"{t} for missing part {c['id']}"
            active[c["id"]]["text"] += c["delta"]
        elif t in ("text-end", "reasoning-end"):
            active = self.text if t == "text-end" else self.reasoning
            assert c["id"] in active, f"{t} for missing part {c['id']}"
            active.pop(c["id"])["state"] = "done"
        elif t == "tool-input-start":
            assert isinstance(c["toolName"], str) and c["toolName"]
            self.partial[c["toolCallId"]] = ""
            self.parts.append(
                {
                    "type": "dynamic-tool",
                    "toolCallId": c["toolCallId"],
                    "toolName": c["toolName"],
                    "state": "input-streaming",
                    "providerExecuted": c.get("providerExecuted"),
                }
            )
        elif t == "tool-input-delta":
            assert c["toolCallId"] in self.partial, "tool-input-delta before its start"
            self.partial[c["toolCallId"]] += c["inputTextDelta"]
        elif t in ("tool-input-available", "tool-input-error"):
            p = self.tool(c["toolCallId"])
            p.update(
                state="input-available" if t == "tool-input-available" else "output-error",
                input=c["input"],
                toolName=c["toolName"],
            )
        elif t == "tool-output-available":
            self.tool(c["toolCallId"]).update(state="output-available", output=c["output"])
        elif t == "tool-output-error":
            self.tool(c["toolCallId"]).update(state="output-error", errorText=c["errorText"])
        elif t == "tool-output-denied":
            self.tool(c["toolCallId"]).update(state="output-denied")
        elif t == "tool-approval-request":
            self.tool(c["toolCallId"]).update(
                state="approval-requested", approval={"id": c["approvalId"]}
            )
        elif t in ("source-url", "source-document"):
            self.parts.append({**c, "type": t})
        elif t == "message-metadata":
            self.metadata = {**(self.metadata or {}), **c["messageMetadata"]}
        elif t.startswith("data-"):
            same = [
                p for p in self.parts if p["type"] == t and "id" in c and p.get("id") == c["id"]
            ]
            if c.get("transient"):
                pass
            elif same:
                same[0]["data"] = c["data"]
            else:
                self.parts.append(dict(c))
        elif t == "file":
            assert c["url"] and c["mediaType"]
            self.parts.append(dict(c))
        elif t == "start-step":
            self.parts.append({"type": "step-start"})
            self.step_open = True
        elif t == "finish-step":
            assert not any(
                p["state"] == "input-streaming" for p in self.parts if p["type"] == "dynamic-tool"
            ), "finish-step with a tool open"
            assert not self.text and not self.reasoning, "finish-step forgets open text"
            self.step_open = False
        elif t == "error":
            self.errors.append(c["errorText"])
        elif t == "finish":
            self.finish = c.get("finishReason")
            if c.get("messageMetadata") is not None:
                self.metadata = {**(self.metadata or {}), **c["messageMetadata"]}
        elif t == "abort":
            self.aborted = True


def read(chunks: list[Any]) -> UIReader:
    r = UIReader()
    assert chunks[0]["type"] == "start"
    for c in chunks:
        r.read(c)
    return r
