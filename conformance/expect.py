"""What each client must end up with, from the transcript (agent_stream's Assembler), and the
checks that compare it with what the client says it got. The rules per wire are the table in
docs/wires-aisdk-a2a.md ("What a client sees")."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agent_stream.assemble import Transcript

# Streams whose text a wire cannot show exactly, and why (the documented, warned-about losses).
REWRITES = {"rewrites_retypes"}  # a rewrite shows as a line break and the new text
MEDIA = {"media"}  # the OpenAI wire shows media as markdown links in the text


@dataclass(frozen=True)
class Item:
    """One thing a client shows, in the transcript's order: a text, a reasoning, a tool call or
    a tool result (``key``: the text, or the call's id), in its thread."""

    thread: str | None
    kind: str  # text | reasoning | tool | result
    key: str
    line: str = ""  # how the OpenAI wire shows it (tool and result lines)


@dataclass
class Expected:
    """What the transcript says a stream is."""

    texts: list[str]
    thinking: list[str]
    tools: list[dict[str, Any]]
    tool_results: dict[str, Any]
    status: str  # completed | error | cancelled | streaming (cut: no stream_end)
    error: str | None
    usage: dict[str, Any] | None = field(default=None)
    order: list[Item] = field(default_factory=list)
    subagents: list[dict[str, Any]] = field(default_factory=list)
    subagent_errors: list[str] = field(default_factory=list)
    approvals: list[str] = field(default_factory=list)  # the calls a pause asks approval for


def _shown(content: Any) -> str:
    return (
        content
        if isinstance(content, str)
        else ""
        if content is None
        else json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    )


def order_of(t: Transcript) -> list[Item]:
    """The items a client shows, in the order the stream produced them (first appearance)."""
    out: list[Item] = []
    for m in t.messages:
        p = m.props
        if m.type in ("text", "refusal", "thinking") and m.content:
            out.append(
                Item(m.thread_id, "reasoning" if m.type == "thinking" else "text", m.content)
            )
        elif m.type == "tool_call" and isinstance(p.get("id"), str):
            name = p.get("name") or "tool"
            out.append(Item(m.thread_id, "tool", p["id"], f"⚙ {name}({p.get('arguments', '')})"))
        elif m.type == "tool_result" and isinstance(p.get("call_id"), str):
            name = p.get("name") or "tool"
            out.append(
                Item(m.thread_id, "result", p["call_id"], f"✓ {name} → {_shown(p.get('content'))}")
            )
    return out


def same_order(got: list[tuple[str, str]], want: list[Item], stream: str = "") -> tuple[bool, str]:
    """Within each thread, the client's (kind, key) items come in the transcript's order (a
    rewritten text, shown after a line break, is matched by its end)."""
    if stream in REWRITES:
        ends = [(i.kind, i.key) for i in want if i.kind in ("text", "reasoning")]
        got = [next(((k, w) for k, w in ends if k == g[0] and g[1].endswith(w)), g) for g in got]
    for tid in dict.fromkeys(i.thread for i in want):
        mine = [(i.kind, i.key) for i in want if i.thread == tid]
        keys = set(mine)
        seen = [g for g in got if g in keys]
        if seen != mine:
            return False, f"thread {tid}: got {json.dumps(seen)[:200]}"
    return True, ""


def order_on_openai(deltas: list[list[str]], want: list[Item]) -> tuple[bool, str]:
    """The OpenAI wire: each item found in the content ("c") or reasoning ("r") deltas, its
    place the delta where it begins; then ``same_order`` on those places."""
    text = {"c": "", "r": ""}
    starts: dict[str, list[tuple[int, int]]] = {"c": [], "r": []}  # (offset, delta index)
    for i, (f, piece) in enumerate(deltas):
        starts[f].append((len(text[f]), i))
        text[f] += piece
    placed: list[tuple[int, int, tuple[str, str]]] = []
    after: dict[tuple[str, str], int] = {}
    for it in want:
        f, needle = ("c", it.key) if it.kind == "text" else ("r", it.line or it.key)
        at = text[f].find(needle, after.get((f, needle), 0))
        if at < 0:
            return False, f"{it.kind} {needle[:60]!r} not found"
        after[(f, needle)] = at + 1
        idx = max(i for off, i in starts[f] if off <= at)
        placed.append((idx, at, (it.kind, it.key)))
    return same_order([k for *_, k in sorted(placed)], want)


def subagents_of(t: Transcript) -> list[dict[str, Any]]:
    """The sub-agents (blocks of type ``agent``) in order of start: id, name, the nearest agent
    block above, and how each ended (``finished`` when completed, else ``error``)."""
    blocks = {b.block_id: b for b in t.blocks}
    out: list[dict[str, Any]] = []
    for b in t.blocks:
        if b.type != "agent":
            continue
        parent, up = None, blocks.get(b.parent_block_id or "")
        while up is not None and parent is None:
            parent = up.block_id if up.type == "agent" else None
            up = blocks.get(up.parent_block_id or "")
        out.append(
            {
                "id": b.block_id,
                "name": b.agent_name or b.label or "agent",
                "parent": parent,
                "end": "finished" if b.status == "completed" else "error",
            }
        )
    return out


def subagent_errors_of(t: Transcript) -> list[str]:
    """The texts of the error Messages inside a sub-agent (a block of type ``agent``, or one
    nested in it), in order: errors that fail the sub-agent, not the reply."""
    blocks = {b.block_id: b for b in t.blocks}
    out: list[str] = []
    for m in t.messages:
        if m.type != "error":
            continue
        up, seen = blocks.get(m.block_id or ""), set()
        while up is not None and up.type != "agent" and up.block_id not in seen:
            seen.add(up.block_id)
            up = blocks.get(up.parent_block_id or "")
        if up is not None and up.type == "agent":
            text = m.props.get("message")
            out.append(text if isinstance(text, str) and text else "the sub-agent failed")
    return out


def expected(t: Transcript) -> Expected:
    msgs = t.messages
    tools = [
        {
            "id": m.props.get("id"),
            "name": m.props.get("name"),
            "arguments": m.props.get("arguments", ""),
        }
        for m in msgs
        if m.type == "tool_call"
    ]
    results = {
        m.props["call_id"]: m.props.get("content")
        for m in msgs
        if m.type == "tool_result" and isinstance(m.props.get("call_id"), str)
    }
    err = t.stream_data.get("error")
    usage = t.stream_data.get("usage")
    return Expected(
        texts=[m.content for m in msgs if m.type in ("text", "refusal")],
        thinking=[m.content for m in msgs if m.type == "thinking"],
        tools=tools,
        tool_results=results,
        status=t.status or "streaming",
        error=err if isinstance(err, str) else None,
        usage=usage if isinstance(usage, dict) else None,
        order=order_of(t),
        subagents=subagents_of(t),
        subagent_errors=subagent_errors_of(t),
        approvals=[
            m.props["call_id"]
            for m in msgs
            if m.type == "user_input"
            and m.props.get("kind") == "approval"
            and m.props.get("call_id") in {x["id"] for x in tools}
        ],
    )


def in_order(hay: str, needles: list[str]) -> bool:
    """Every needle occurs in ``hay``, each after the previous one."""
    at = 0
    for n in needles:
        i = hay.find(n, at)
        if i < 0:
            return False
        at = i + len(n)
    return True


def same_texts(got: list[str], want: list[str], stream: str) -> bool:
    if stream in REWRITES:
        return len(got) == len(want) and all(g.endswith(w) for g, w in zip(got, want, strict=True))
    return got == want


def _usage(got: Any, want: dict[str, Any] | None) -> bool:
    if want is None:
        return got is None
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    return isinstance(got, dict) and all(got.get(k) == want.get(k) for k in keys)


Checks = dict[str, tuple[bool, str]]


def check_openai(seen: dict[str, Any], e: Expected, stream: str, sdk: bool = False) -> Checks:
    """The OpenAI wire: one content string, reasoning_content, agent tools as progress."""
    text_ok = (
        in_order(seen["text"], e.texts)
        if stream in REWRITES | MEDIA
        else seen["text"] == "".join(e.texts)
    )
    shown = [t["name"] for t in e.tools if t["name"]] + [
        r for r in e.tool_results.values() if isinstance(r, str)
    ]
    tools_ok = (
        not seen["tool_calls"]
        and not seen.get("tool_errors")
        and all(n in seen["reasoning"] for n in shown)
    )
    if e.status == "completed":
        fin_ok = seen["finish_reason"] == "stop" and seen["error"] is None
    else:
        fin_ok = seen["error"] is not None and (
            e.status != "streaming" or "incomplete" in seen["error"].lower() or sdk
        )
    u = seen["usage"]
    if sdk and e.usage is None:  # the SDK reports absent usage as nulls
        usage_ok = u is None or all(v is None for v in u.values())
    else:
        usage_ok = _usage(u, e.usage)
    return {
        "text": (text_ok, repr(seen["text"])[:120]),
        "reasoning": (in_order(seen["reasoning"], e.thinking), repr(seen["reasoning"])[:120]),
        "tools": (tools_ok, json.dumps(seen["tool_calls"] or seen.get("tool_errors"))[:160]),
        "finish": (fin_ok, f"finish_reason={seen['finish_reason']} error={seen['error']}"),
        "usage": (usage_ok, json.dumps(u)),
        "order": order_on_openai(seen["deltas"], e.order),
        # a sub-agent's error is a progress line, and the reply goes on to its own ending
        "subagent errors": (
            in_order(seen["reasoning"], e.subagent_errors),
            repr(seen["reasoning"])[:120],
        ),
    }


def check_agui(seen: dict[str, Any], e: Expected, stream: str) -> Checks:
    """AG-UI: messages apart, tool calls with their ids and names, RUN_FINISHED/RUN_ERROR."""
    calls = [{k: c.get(k) for k in ("id", "name", "arguments")} for c in seen["tool_calls"]]
    want = {
        "completed": "completed",
        "cancelled": "cancelled",
        "error": "error",
        "streaming": "error",
    }[e.status]
    fin_ok = seen["finish"] == want and (e.status != "error" or seen["error"] == e.error)
    u = seen["usage"]
    usage_ok = (
        (u is None)
        if e.usage is None
        else isinstance(u, dict)
        and u.get("inputTokens") == e.usage.get("prompt_tokens")
        and u.get("outputTokens") == e.usage.get("completion_tokens")
    )
    return {
        "verify": (seen["verify_error"] is None, str(seen["verify_error"])),
        "text": (same_texts(seen["texts"], e.texts, stream), json.dumps(seen["texts"])[:160]),
        "reasoning": (seen["reasoning"] == e.thinking, json.dumps(seen["reasoning"])[:120]),
        "tools": (calls == e.tools, json.dumps(calls)[:200]),
        "tool results": (
            seen["tool_results"] == {k: _shown(v) for k, v in e.tool_results.items()},
            json.dumps(seen["tool_results"])[:200],
        ),
        "finish": (fin_ok, f"finish={seen['finish']} error={seen['error']}"),
        "usage": (usage_ok, json.dumps(u)),
        "order": same_order([tuple(o) for o in seen["order"]], e.order, stream),
        "subagents": (seen["subagents"] == e.subagents, json.dumps(seen["subagents"])[:200]),
    }


def check_ui(seen: dict[str, Any], e: Expected, stream: str, version: int = 6) -> Checks:
    """The AI SDK UI message stream: parts apart, agent tools provider-executed with output; a
    pause for approval is the tool part's ``approval-requested`` state (ai 6), a
    ``data-user_input`` part (ai 5)."""
    tools_ok = len(seen["tool_calls"]) == len(e.tools)
    for got, want in zip(seen["tool_calls"], e.tools, strict=False):
        tools_ok = (
            tools_ok
            and got["id"] == want["id"]
            and got["name"] == want["name"]
            and got.get("providerExecuted") is True
        )
        if e.status == "completed":
            tools_ok = tools_ok and got["input"] == json.loads(want["arguments"] or "{}")
        if want["id"] in e.tool_results:
            tools_ok = tools_ok and got.get("output") == e.tool_results[want["id"]]
    if version >= 6:
        asked = [t["id"] for t in seen["tool_calls"] if t["state"] == "approval-requested"]
        approvals_ok = asked == e.approvals and all(
            t.get("approval", {}).get("id") for t in seen["tool_calls"] if t["id"] in asked
        )
    else:
        inputs = [d["data"] for d in seen["data"] if d["type"] == "data-user_input"]
        approvals_ok = [i.get("call_id") for i in inputs if i.get("kind") == "approval"] == (
            e.approvals
        )
    errors = seen["errors"]
    fin = seen["finish"]
    if e.status == "completed":
        fin_ok = fin == "stop" and not errors
    elif e.status == "error":
        fin_ok = fin == "error" and errors == [e.error]
    elif e.status == "cancelled":
        fin_ok = fin == "abort" and not errors
    else:
        fin_ok = fin is None and len(errors) == 1
    return {
        "text": (same_texts(seen["texts"], e.texts, stream), json.dumps(seen["texts"])[:160]),
        "reasoning": (seen["reasoning"] == e.thinking, json.dumps(seen["reasoning"])[:120]),
        "tools": (tools_ok, json.dumps(seen["tool_calls"])[:200]),
        "approvals": (approvals_ok, json.dumps(seen["tool_calls"])[:200]),
        "finish": (fin_ok, f"finish={fin} errors={errors}"),
        "usage": (_usage(seen["usage"], e.usage), json.dumps(seen["usage"])),
        # a tool part holds its output: results have no place of their own
        "order": same_order(
            [tuple(o) for o in seen["order"]], [i for i in e.order if i.kind != "result"], stream
        ),
        # a sub-agent's error is a data-error part of the message, not an error of the reply
        "subagent errors": (
            [d["data"].get("message") for d in seen["data"] if d["type"] == "data-error"]
            == e.subagent_errors,
            json.dumps(seen["data"])[:200],
        ),
    }


def check_a2a(seen: dict[str, Any], e: Expected, stream: str) -> Checks:
    """A2A: artifacts per message, DataPart tool calls, the final task state."""
    state = seen["state"]
    if e.status == "completed":
        fin_ok = state == "completed"
    elif e.status == "cancelled":
        fin_ok = state == "canceled"
    elif e.status == "error":
        fin_ok = state == "failed" and seen["status_text"] == e.error
    else:
        fin_ok = state == "failed" and seen["incomplete"]
    # completed or cut: every artifact gets its last chunk (a cut one's says incomplete)
    closed_ok = e.status not in ("completed", "streaming") or not seen["unclosed"]
    return {
        "closed": (closed_ok, f"no lastChunk: {seen['unclosed']}"),
        "sdk": (
            seen["error"] is None and not seen["sdk_warnings"],
            f"{seen['error']} {seen['sdk_warnings']}",
        ),
        "text": (same_texts(seen["texts"], e.texts, stream), json.dumps(seen["texts"])[:160]),
        "reasoning": (seen["reasoning"] == e.thinking, json.dumps(seen["reasoning"])[:120]),
        "tools": (seen["tool_calls"] == e.tools, json.dumps(seen["tool_calls"])[:200]),
        "tool results": (
            seen["tool_results"] == e.tool_results,
            json.dumps(seen["tool_results"])[:200],
        ),
        "finish": (fin_ok, f"state={state} text={seen['status_text']}"),
        "usage": (_usage(seen["usage"], e.usage), json.dumps(seen["usage"])),
        "order": same_order([tuple(o) for o in seen["order"]], e.order, stream),
    }


def check_chat(seen: dict[str, Any], e: Expected, stream: str) -> Checks:
    """The chat wire as a peer decodes it (thinking withheld by default): the texts, tool calls
    and results, their order and the ending; a cut stream ends with status error."""
    from agent_stream.assemble import assemble
    from agent_stream.message import Message

    got = expected(assemble([Message.from_json(s) for s in seen["messages"]]))
    if e.status == "streaming":
        fin_ok = got.status == "error" and "before it was complete" in (got.error or "")
    else:
        fin_ok = got.status == e.status and (e.status != "error" or got.error == e.error)
    want_order = [i for i in e.order if i.kind != "reasoning"]
    return {
        "text": (same_texts(got.texts, e.texts, stream), json.dumps(got.texts)[:160]),
        "tools": (got.tools == e.tools, json.dumps(got.tools)[:200]),
        "tool results": (got.tool_results == e.tool_results, json.dumps(got.tool_results)[:200]),
        "finish": (fin_ok, f"status={got.status} error={got.error}"),
        "order": same_order([(i.kind, i.key) for i in got.order], want_order, stream),
    }


def _within(text: str, hay: str) -> bool:
    """``text``'s characters occur in ``hay`` in order (other characters between them)."""
    chars = iter(hay)
    return all(c in chars for c in text)


def check_mcp(seen: dict[str, Any], e: Expected, stream: str) -> Checks:
    """MCP (``/mcp`` of the gateway): the result is the texts, ``isError`` unless the reply
    completed (with its error); progress carries the texts in order and a line per tool call."""
    texts = [t for t in e.texts if t]
    got = seen["text"]
    if e.status == "completed":
        fin_ok = not seen["is_error"]
        text_ok = got == "\n\n".join(texts)
    else:
        fin_ok = seen["is_error"] and (e.status != "error" or (e.error or "") in got)
        text_ok = got.startswith("\n\n".join(texts))
    calls = [
        line[len("[tool call ") : line.index("]")]
        for line in seen["progress"]
        if line.startswith("[tool call ") and "]" in line
    ]
    want_calls = [t["name"] or "tool" for t in e.tools]
    said = "".join(seen["progress"])
    # parallel threads' texts interleave: each is still there, its characters in order
    threads = {i.thread for i in e.order if i.kind == "text"}
    progress_ok = stream in REWRITES or (
        all(_within(t, said) for t in texts) if len(threads) > 1 else in_order(said, texts)
    )
    return {
        "text": (text_ok, json.dumps(got)[:160]),
        "finish": (fin_ok, f"is_error={seen['is_error']} status={e.status}"),
        "tools": (calls == want_calls, json.dumps(calls)[:200]),
        "progress": (progress_ok and seen["increasing"], json.dumps(seen["progress"])[:200]),
    }


def check_agui_resume(seen: dict[str, Any], asked: Transcript, answered: Transcript) -> Checks:
    """AG-UI human in the loop: the first run ends with one interrupt per question (an
    approval: reason ``tool_approval``, the tool call it belongs to, the question as its
    message); the client refuses a run leaving them unanswered; the resume's run is the
    answered reply and ends success with nothing pending; an unknown interrupt is refused."""
    runs = seen["runs"]
    if len(runs) != 2:
        return {"runs": (False, f"{len(runs)} runs")}
    first, second = runs
    asks = [m.props for m in asked.messages if m.type == "user_input"]
    want = [
        {
            "reason": "tool_approval" if p.get("kind") == "approval" else "input_required",
            "message": p.get("content"),
            "toolCallId": p.get("call_id"),
        }
        for p in asks
    ]
    got = [{k: i[k] for k in ("reason", "message", "toolCallId")} for i in first["interrupts"]]
    want_after = expected(answered)
    return {
        "verify": (
            first["verify_error"] is None and second["verify_error"] is None,
            f"{first['verify_error']} / {second['verify_error']}",
        ),
        "interrupts": (
            first["finish"] == "interrupt" and got == want,
            f"finish={first['finish']} {json.dumps(got)[:200]}",
        ),
        "pending": (
            first["pending"] == [i["id"] for i in first["interrupts"]] and second["pending"] == [],
            f"{first['pending']} then {second['pending']}",
        ),
        "unanswered refused": (seen["unanswered_refused"] is True, str(seen["unanswered_refused"])),
        "resumed": (
            second["error"] is None
            and second["finish"] == "success"
            and second["texts"] == want_after.texts
            and second["tool_results"]
            == {k: _shown(v) for k, v in want_after.tool_results.items()},
            f"finish={second['finish']} error={second['error']} texts={second['texts']}",
        ),
        "unknown interrupt": (
            "400" in str(seen["unknown_error"])
            and "unknown_interrupt" in str(seen["unknown_error"]),
            str(seen["unknown_error"])[:200],
        ),
    }


def check_round_trip(seen: dict[str, Any], approved: bool) -> Checks:
    """ai 6's chat through a pause for approval (corpus ``approval_pause``): asked, answered by
    the chat's own follow-up, and continued in the same assistant message."""
    parts = seen["parts"]
    [tool] = [p for p in parts if p.get("toolCallId") == "call_del"] or [{}]
    if approved:
        tool_ok = tool.get("state") == "output-available" and tool.get("output") == "deleted a"
    else:
        tool_ok = tool.get("state") == "output-denied"
    texts = [p.get("text") for p in parts if p["type"] == "text"]
    sources = [p.get("url") or p.get("title") for p in parts if p["type"].startswith("source-")]
    meta = seen["metadata"] or {}
    return {
        "asked": (seen["asked"] is not None and not seen["errors"], json.dumps(seen)[:200]),
        "follow-up": (
            seen["requests"] == 2 and seen["messages"] == 2 and seen["status"] == "ready",
            f"requests={seen['requests']} messages={seen['messages']} status={seen['status']}",
        ),
        "tool": (tool_ok, json.dumps(tool)[:200]),
        "text": (texts == ["Deleting it.", "Done." if approved else "Kept it."], str(texts)),
        "sources": (sources == ["https://example.org/a", "Policy"], str(sources)),
        "metadata": (
            meta.get("model") == "m-1" and (meta.get("usage") or {}).get("total_tokens") == 7,
            json.dumps(meta),
        ),
    }


HITL_CHECKERS = {"node-ag-ui-resume": check_agui_resume}

CHECKERS = {
    "node-openai": lambda s, e, n: check_openai(s, e, n),
    "python-openai": lambda s, e, n: check_openai(s, e, n),
    "node-ai-streamText": lambda s, e, n: check_openai(s, e, n, sdk=True),
    "node-ag-ui": check_agui,
    "node-ai-ui-stream": check_ui,
    "node-ai5-ui-stream": lambda s, e, n: check_ui(s, e, n, version=5),
    "node-ai-approval-yes": lambda s, e, n: check_round_trip(s, True),
    "node-ai-approval-no": lambda s, e, n: check_round_trip(s, False),
    "python-a2a-sdk": check_a2a,
    "python-a2a-sdk-0.3": check_a2a,
    "python-chat": check_chat,
    "python-mcp": check_mcp,
}

# Checks known to fail, by (wire, stream or "*", check) -> the reason: reported as "xfail"
# while they fail, and listed as "no longer failing" once they pass. Empty: every check passes
# (a recovered sub-agent error no longer ends the OpenAI stream nor fails the AI SDK reply).
# Add an entry only with the reason and what will fix it.
KNOWN: dict[tuple[str, str, str], str] = {}
WIRE_OF = {
    "node-openai": "openai",
    "python-openai": "openai",
    "node-ai-streamText": "openai",
    "node-ag-ui": "agui",
    "node-ag-ui-resume": "agui",
    "node-ai-ui-stream": "aisdk",
    "node-ai5-ui-stream": "aisdk",
    "node-ai-approval-yes": "aisdk",
    "node-ai-approval-no": "aisdk",
    "python-a2a-sdk": "a2a",
    "python-a2a-sdk-0.3": "a2a",
    "python-chat": "chat",
    "python-mcp": "mcp",
}


def known(client: str, stream: str, check: str) -> str | None:
    wire = WIRE_OF[client]
    return KNOWN.get((wire, stream, check)) or KNOWN.get((wire, "*", check))


def _wire_errors(wire_text: str) -> list[str]:
    """The error texts a UI stream / OpenAI wire carried (what a client may report)."""
    out: list[str] = []
    for line in wire_text.splitlines():
        if line.startswith("data: {"):
            obj = json.loads(line[6:])
            if obj.get("type") == "error":
                out.append(obj.get("errorText", ""))
            elif isinstance(obj.get("error"), dict):
                out.append(str(obj["error"].get("message")))
    return out


def check_protocol(client: str, seen: dict[str, Any], wires: dict[str, str]) -> Checks:
    """For random streams: the client accepted the wire. It reports no error but those the
    wire carried, and its own validation (verifyEvents, a2a-sdk's task manager) passed."""
    if client in ("node-ai-ui-stream", "node-ai5-ui-stream"):
        sent = _wire_errors(wires["aisdk"])
        return {"protocol": (all(e in sent for e in seen["errors"]), json.dumps(seen["errors"]))}
    if client == "node-ag-ui":
        ok = seen["verify_error"] is None and (seen["error"] is None or seen["finish"] == "error")
        return {"protocol": (ok, f"{seen['verify_error']} {seen['error']}")}
    if client in ("python-chat", "python-mcp"):
        return {"protocol": (True, "")}  # decoded without a bad line (else it crashed)
    if client in ("python-a2a-sdk", "python-a2a-sdk-0.3"):
        return {
            "protocol": (
                seen["error"] is None and not seen["sdk_warnings"],
                f"{seen['error']} {seen['sdk_warnings']}",
            )
        }
    sent = _wire_errors(wires["openai"])
    err = seen["error"]
    ok = err is None or any(s in err for s in sent) or (bool(sent) and "error" in err.lower())
    return {"protocol": (ok and not seen.get("tool_errors"), f"{err} {seen.get('tool_errors')}")}
