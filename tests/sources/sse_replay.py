"""A local HTTP server replaying recorded model streams (SSE) for the SDK clients under test.

Each POST takes the next scripted reply: a list of ``(event name or None, data)`` frames sent as
``event:`` / ``data:`` lines (the Anthropic SDK dispatches on the ``event:`` line), optionally
with a pause before each frame or a cut (the connection dropped) after some frames. The request
bodies are kept so tests can see what reached the model (history, tool results).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Frame = tuple[str | None, Any]


@dataclass
class Script:
    frames: list[Frame]
    delay: float = 0.0
    cut_after: int | None = None  # drop the connection after this many frames
    done_line: bool = False  # end with "data: [DONE]" (chat completions)


@dataclass
class SSEServer:
    scripts: list[Script] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    finished: list[float] = field(default_factory=list)  # when each reply was fully sent
    url: str = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(await request.json())
        script = self.scripts.pop(0)
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        try:
            for i, (name, data) in enumerate(script.frames):
                if script.cut_after is not None and i >= script.cut_after:
                    assert request.transport is not None
                    request.transport.close()
                    return resp
                if script.delay:
                    await asyncio.sleep(script.delay)
                head = f"event: {name}\n" if name else ""
                await resp.write(f"{head}data: {json.dumps(data)}\n\n".encode())
            if script.done_line:
                await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
            self.finished.append(time.monotonic())
        except (asyncio.CancelledError, ConnectionResetError):
            self.cancelled.set()
            raise
        return resp


async def serve(scripts: list[Script]) -> AsyncIterator[SSEServer]:
    srv = SSEServer(list(scripts))
    app = web.Application()
    app.router.add_route("POST", "/{tail:.*}", srv.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    srv.url = f"http://127.0.0.1:{port}"
    try:
        yield srv
    finally:
        await runner.cleanup()


def anthropic_frames(
    model: str = "claude-test",
    *,
    thinking: str | None = None,
    text: str = "",
    tool: tuple[str, str, str] | None = None,
    input_tokens: int = 12,
    output_tokens: int = 7,
    msg_id: str = "msg_1",
) -> list[Frame]:
    """The event shapes of a real Anthropic Messages stream (thinking, text, one tool use)."""
    f: list[Frame] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": input_tokens, "output_tokens": 1},
                },
            },
        )
    ]
    i = 0
    if thinking is not None:
        f.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
            )
        )
        for w in _words(thinking):
            f.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "thinking_delta", "thinking": w},
                    },
                )
            )
        f.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "signature_delta", "signature": "c2lnbmF0dXJl"},
                },
            )
        )
        f.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        i += 1
        f.append(("ping", {"type": "ping"}))
    if text:
        f.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        for w in _words(text):
            f.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "text_delta", "text": w},
                    },
                )
            )
        f.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        i += 1
    if tool is not None:
        call_id, name, args = tool
        f.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
            )
        )
        for k in range(0, len(args), 5):
            f.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": args[k : k + 5]},
                    },
                )
            )
        f.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    f.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None},
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            },
        )
    )
    f.append(("message_stop", {"type": "message_stop"}))
    return f


def _words(text: str) -> list[str]:
    out = [w + " " for w in text.split(" ")]
    out[-1] = out[-1][:-1]
    return out


def responses_frames(
    model: str = "gpt-test",
    *,
    reasoning: str | None = None,
    text: str = "",
    call: tuple[str, str, str] | None = None,
    usage: tuple[int, int] = (20, 9),
) -> list[Frame]:
    """The event shapes of a real OpenAI Responses stream."""
    seq = iter(range(10_000))
    resp = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": model,
        "status": "in_progress",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    f: list[Frame] = [
        (None, {"type": "response.created", "sequence_number": next(seq), "response": resp}),
        (None, {"type": "response.in_progress", "sequence_number": next(seq), "response": resp}),
    ]
    out: list[dict[str, Any]] = []
    idx = 0
    if reasoning is not None:
        item = {"id": "rs_1", "type": "reasoning", "summary": []}
        f.append(
            (
                None,
                {
                    "type": "response.output_item.added",
                    "sequence_number": next(seq),
                    "output_index": idx,
                    "item": item,
                },
            )
        )
        for w in _words(reasoning):
            f.append(
                (
                    None,
                    {
                        "type": "response.reasoning_summary_text.delta",
                        "sequence_number": next(seq),
                        "item_id": "rs_1",
                        "output_index": idx,
                        "summary_index": 0,
                        "delta": w,
                    },
                )
            )
        done = {**item, "summary": [{"type": "summary_text", "text": reasoning}]}
        f.append(
            (
                None,
                {
                    "type": "response.output_item.done",
                    "sequence_number": next(seq),
                    "output_index": idx,
                    "item": done,
                },
            )
        )
        out.append(done)
        idx += 1
    if text:
        item = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        f.append(
            (
                None,
                {
                    "type": "response.output_item.added",
                    "sequence_number": next(seq),
                    "output_index": idx,
                    "item": item,
                },
            )
        )
        for w in _words(text):
            f.append(
                (
                    None,
                    {
                        "type": "response.output_text.delta",
                        "sequence_number": next(seq),
                        "item_id": "msg_1",
                        "output_index": idx,
                        "content_index": 0,
                        "delta": w,
                        "logprobs": [],
                    },
                )
            )
        done = {
            **item,
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        f.append(
            (
                None,
                {
                    "type": "response.output_item.done",
                    "sequence_number": next(seq),
                    "output_index": idx,
                    "item": done,
                },
            )
        )
        out.append(done)
        idx += 1
    if call is not None:
        call_id, name, args = call
        item = {
            "id": "fc_1",
            "type": "function_call",
            "call_id": call_id,
            "name": name,
            "arguments": "",
            "status": "in_progress",
        }
        f.append(
            (
                None,
                {
                    "type": "response.output_item.added",
                    "sequence_number": next(seq),
                    "output_index": idx,
                    "item": item,
                },
            )
        )
        for k in range(0, len(args), 5):
            f.append(
                (
                    None,
                    {
                        "type": "response.function_call_arguments.delta",
                        "sequence_number": next(seq),
                        "item_id": "fc_1",
                        "output_index": idx,
                        "delta": args[k : k + 5],
                    },
                )
            )
        done = {**item, "arguments": args, "status": "completed"}
        f.append(
            (
                None,
                {
                    "type": "response.output_item.done",
                    "sequence_number": next(seq),
                    "output_index": idx,
                    "item": done,
                },
            )
        )
        out.append(done)
    final = {
        **resp,
        "status": "completed",
        "output": out,
        "usage": {
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
    f.append(
        (None, {"type": "response.completed", "sequence_number": next(seq), "response": final})
    )
    return f


def chat_frames(
    *,
    text: str = "",
    calls: tuple[tuple[str, str, str], ...] = (),
    usage: tuple[int, int] = (10, 5),
    model: str = "gpt-test",
) -> Script:
    """A chat-completions stream (text, or parallel tool calls with streamed arguments)."""

    def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> Frame:
        return (
            None,
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": model,
                "choices": []
                if delta is None
                else [{"index": 0, "delta": delta, "finish_reason": finish}],
            },
        )

    f: list[Frame] = []
    for i, w in enumerate(_words(text) if text else []):
        f.append(chunk({"role": "assistant", "content": w} if i == 0 else {"content": w}))
    for i, (cid, name, args) in enumerate(calls):
        f.append(
            chunk(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": i,
                            "id": cid,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ],
                }
            )
        )
        for k in range(0, len(args), 6):
            f.append(
                chunk({"tool_calls": [{"index": i, "function": {"arguments": args[k : k + 6]}}]})
            )
    f.append(chunk({}, "tool_calls" if calls else "stop"))
    last = chunk(None)
    last[1]["usage"] = {
        "prompt_tokens": usage[0],
        "completion_tokens": usage[1],
        "total_tokens": usage[0] + usage[1],
    }
    f.append(last)
    return Script(f, done_line=True)
