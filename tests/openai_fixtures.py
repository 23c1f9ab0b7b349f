"""The OpenAI tests' shared pieces: the hierarchical reply they stream (encoder, and the real
client over HTTP), and what the ``openai`` package makes of SSE text (``client_view``)."""

from __future__ import annotations

import asyncio
from typing import Any

from openai._streaming import SSEDecoder
from openai.types.chat import ChatCompletionChunk

from agent_stream.message import Message, tool_call
from agent_stream.writer import StreamWriter, collect

USAGE = {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21}


async def reply(out: StreamWriter) -> None:
    """Thinking and a tool call in a block, two threads writing at once, a long answer, usage."""
    async with out.block("llm", label="Answer") as b:
        async with b.message("thinking") as m:
            await m.append("Let me ")
            await m.append("check.")
        await b.send(tool_call(id="call_1", name="search", arguments='{"q": "weather"}'))

    async def one(th: Any) -> None:
        async with th.message("text") as m:
            for w in ("Weather: ", "sunny", ", 25°C. "):
                await m.append(w)
                await asyncio.sleep(0)

    async def two(th: Any) -> None:
        async with th.message("text") as m:
            for w in ("News: ", "all ", "quiet. "):
                await m.append(w)
                await asyncio.sleep(0)

    await out.parallel(one, two)
    async with out.message("text") as m:
        for i in range(50):
            await m.append(f"word{i} ")
    out.usage = dict(USAGE)


def reply_messages() -> list[Message]:
    """The reply as Messages (request id ``req-1``)."""
    return asyncio.run(collect(reply, request_id="req-1"))


def client_view(wire: list[str]) -> dict[str, Any]:
    """What an OpenAI client gets from this SSE text (and checks every rule on the way)."""
    events = list(SSEDecoder().iter_bytes(iter(["".join(wire).encode()])))
    view: dict[str, Any] = {
        "content": "",
        "reasoning": "",
        "refusal": "",
        "tools": {},
        "finish": [],
        "roles": 0,
        "ids": set(),
        "error": None,
        "usage": None,
        "chunks": 0,
    }
    done = False
    for ev in events:
        assert not done, "nothing may follow [DONE]"
        if ev.data == "[DONE]":
            done = True
            continue
        assert view["error"] is None, "only [DONE] may follow an error"
        data = ev.json()
        if "error" in data:
            view["error"] = data["error"]
            continue
        c = ChatCompletionChunk.model_validate(data)
        assert c.object == "chat.completion.chunk"
        view["ids"].add(c.id)
        view["chunks"] += 1
        if c.usage is not None:
            assert c.choices == []
            view["usage"] = c.usage
        for ch in c.choices:
            d = ch.delta
            if d.role is not None:
                assert d.role == "assistant"
                assert view["chunks"] == 1, "role only on the first chunk"
                view["roles"] += 1
            view["content"] += d.content or ""
            view["refusal"] += d.refusal or ""
            view["reasoning"] += (d.model_extra or {}).get("reasoning_content") or ""
            for tc in d.tool_calls or []:
                slot = view["tools"].setdefault(tc.index, {"id": None, "name": "", "args": ""})
                if tc.id:
                    assert slot["id"] is None, "id on the first fragment only"
                    slot["id"] = tc.id
                    assert tc.type == "function"
                if tc.function is not None:
                    slot["name"] += tc.function.name or ""
                    slot["args"] += tc.function.arguments or ""
            if ch.finish_reason is not None:
                view["finish"].append(ch.finish_reason)
    assert done, "the stream ends with [DONE]"
    assert len(view["ids"]) <= 1, "one id for the whole completion"
    if view["error"] is None:
        assert len(view["finish"]) == 1, "exactly one finish_reason"
        assert view["roles"] == 1
    return view
