"""Python clients reading the wires over HTTP: the ``openai`` package and ``a2a-sdk``'s client.

Each returns what the client ends up with, in the shape the Node clients print.
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import uuid4

import httpx


async def openai_client(base: str, stream: str) -> dict[str, Any]:
    """``AsyncOpenAI().chat.completions.create(stream=True)``, accumulated as an app would."""
    from openai import AsyncOpenAI

    seen: dict[str, Any] = {
        "text": "",
        "reasoning": "",
        "tool_calls": [],
        "finish_reason": None,
        "usage": None,
        "error": None,
        "deltas": [],
    }
    calls: dict[int, dict[str, Any]] = {}
    client = AsyncOpenAI(
        base_url=f"{base}/openai/{stream}", api_key="x", max_retries=0, timeout=30.0
    )
    try:
        s = await client.chat.completions.create(
            model="agent-stream",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in s:
            if chunk.usage is not None:
                seen["usage"] = {
                    k: getattr(chunk.usage, k)
                    for k in ("prompt_tokens", "completion_tokens", "total_tokens")
                }
            for ch in chunk.choices:
                d = ch.delta
                seen["text"] += d.content or ""
                if d.content:
                    seen["deltas"].append(["c", d.content])
                extra = d.model_extra or {}
                r = extra.get("reasoning_content")
                if isinstance(r, str) and r:
                    seen["reasoning"] += r
                    seen["deltas"].append(["r", r])
                for tc in d.tool_calls or []:
                    c = calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
                    c["id"] = tc.id or c["id"]
                    if tc.function is not None:
                        c["name"] = tc.function.name or c["name"]
                        c["arguments"] += tc.function.arguments or ""
                if ch.finish_reason:
                    seen["finish_reason"] = ch.finish_reason
    except Exception as exc:  # what the app would catch: the client's own error
        seen["error"] = str(exc) or type(exc).__name__
    finally:
        await client.close()
    seen["tool_calls"] = list(calls.values())
    return seen


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


async def a2a_client(base: str, stream: str, version: str = "1.0") -> dict[str, Any]:
    """``a2a-sdk``'s ``ClientFactory`` client at A2A ``version`` (1.0, or 0.3 through the SDK's
    own 0.3 transport): ``send_message`` streaming, the SDK's task manager's final Task read as
    an app would (artifacts by their agent_stream metadata)."""
    from a2a.client import ClientConfig, ClientFactory
    from a2a.compat.v0_3.conversions import to_compat_task
    from a2a.server.context import ServerCallContext
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.server.tasks.task_manager import TaskManager
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        Message,
        Part,
        Role,
        SendMessageRequest,
    )

    from agent_stream import merge

    card = AgentCard(
        name="conformance",
        description="agent_stream wires",
        version="1",
        supported_interfaces=[
            AgentInterface(
                url=f"{base}/a2a/{stream}", protocol_binding="JSONRPC", protocol_version=version
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text"],
        default_output_modes=["text"],
    )
    records = _Records()
    logging.getLogger("a2a").addHandler(records)
    seen: dict[str, Any] = {
        "texts": [],
        "reasoning": [],
        "tool_calls": [],
        "tool_results": {},
        "state": None,
        "status_text": None,
        "usage": None,
        "incomplete": False,
        "error": None,
        "sdk_warnings": records.lines,
        "order": [],
    }
    task = None
    opened: dict[str, bool] = {}  # artifact id -> still open (no lastChunk yet)
    mgr = TaskManager(InMemoryTaskStore(), ServerCallContext(), None, None, None)
    async with httpx.AsyncClient(timeout=30) as http:
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        msg = Message(role=Role.ROLE_USER, message_id=str(uuid4()), parts=[Part(text="hi")])
        try:
            async for item in client.send_message(SendMessageRequest(message=msg)):
                which = item.WhichOneof("payload")
                event = getattr(item, which)
                if which == "message":
                    continue
                await mgr.process(event)
                if which == "artifact_update":  # which artifacts got their last chunk
                    opened[event.artifact.artifact_id] = not event.last_chunk
            built = await mgr.get_task()
            task = to_compat_task(built) if built is not None else None
        except Exception as exc:
            seen["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            logging.getLogger("a2a").removeHandler(records)
    seen["unclosed"] = [a for a, still in opened.items() if still]
    if task is None:
        return seen
    for art in task.artifacts or []:
        meta = (art.metadata or {}).get("agent_stream") or {}
        kind = meta.get("type") or art.name
        roots = [p.root for p in art.parts]
        if kind in ("text", "refusal", "thinking"):
            s = "".join(getattr(r, "text", "") for r in roots)
            seen["reasoning" if kind == "thinking" else "texts"].append(s)
            seen["order"].append(["reasoning" if kind == "thinking" else "text", s])
        elif kind in ("tool_call", "tool_result") and roots:
            props: dict[str, Any] = dict(getattr(roots[0], "data", {}))
            for r in roots[1:]:
                dm = (r.metadata or {}).get("agent_stream") or {}
                props = merge.apply(
                    props,
                    dm.get("delta_action") or "append",
                    dm.get("delta_path"),
                    dict(getattr(r, "data", {})),
                )
            if kind == "tool_call":
                seen["tool_calls"].append({k: props.get(k) for k in ("id", "name", "arguments")})
                seen["order"].append(["tool", props.get("id")])
            elif isinstance(props.get("call_id"), str):
                seen["tool_results"][props["call_id"]] = props.get("content")
                seen["order"].append(["result", props["call_id"]])
    seen["state"] = task.status.state.value
    if task.status.message is not None:
        seen["status_text"] = "".join(
            getattr(p.root, "text", "") for p in task.status.message.parts
        )
    end = ((task.metadata or {}).get("agent_stream") or {}).get("data") or {}
    seen["usage"] = end.get("usage")
    seen["incomplete"] = end.get("status") == "incomplete"
    return seen


async def a2a03_client(base: str, stream: str) -> dict[str, Any]:
    """``a2a-sdk``'s client at A2A 0.3 (its own 0.3 transport): see :func:`a2a_client`."""
    return await a2a_client(base, stream, "0.3")


async def chat_client(base: str, stream: str) -> dict[str, Any]:
    """A chat peer: the ChatMessage lines read over HTTP and decoded by agent_stream's chat
    decoder (what a receiving agent runs), then assembled: the transcript it ends up with."""
    from agent_stream.adapters.chat.lines import chat_lines

    dec = chat_lines()
    msgs: list[Any] = []
    async with httpx.AsyncClient(timeout=30) as http:
        r = await http.post(f"{base}/chat/{stream}", json={})
        r.raise_for_status()
        for line in r.text.splitlines():
            if line.strip():
                msgs += dec.feed_line(line)
    msgs += dec.close()
    return {
        "messages": [m.to_json() for m in msgs],
        "warnings": [str(w) for w in dec.drain_warnings()],
    }


async def mcp_client(base: str, stream: str) -> dict[str, Any]:
    """The ``mcp`` SDK's client (``streamable_http_client`` and ``ClientSession``): the tool
    named after the stream called with a progress token; the progress lines and the result."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    progress: list[str] = []
    values: list[float] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        values.append(p)
        progress.append(message or "")

    async with (
        httpx2.AsyncClient(timeout=30) as http,
        streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool(stream, {"question": "hi"}, progress_callback=on_progress)
    return {
        "text": "".join(c.text for c in result.content if c.type == "text"),
        "is_error": bool(result.is_error),
        "progress": progress,
        "increasing": values == sorted(set(values)),
    }
