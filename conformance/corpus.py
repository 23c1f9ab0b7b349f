"""The conformance corpus: tricky Message streams, written out chunk by chunk (no writer, no
clock), so every wire's output is the same on every run."""

from __future__ import annotations

from typing import Any

from agent_stream.message import Message

__all__ = ["CORPUS", "HITL", "ROUND_TRIPS", "corpus", "hitl", "round_trips"]


def ev(name: str, ids: dict[str, Any] | None = None, **data: Any) -> Message:
    """A lifecycle event Message."""
    return Message(type="event", props={"event": name, "data": data}, **(ids or {}))


def m(
    type_: str,
    props: dict[str, Any] | None,
    mid: str | None = None,
    tid: str | None = None,
    bid: str | None = None,
    **kw: Any,
) -> Message:
    """A content Message."""
    return Message(type=type_, props=props, message_id=mid, thread_id=tid, block_id=bid, **kw)


def d(
    type_: str,
    props: dict[str, Any],
    mid: str,
    tid: str | None = None,
    bid: str | None = None,
    **kw: Any,
) -> Message:
    """A delta chunk."""
    return Message(
        type=type_, props=props, message_id=mid, thread_id=tid, block_id=bid, delta=True, **kw
    )


def start(rid: str) -> Message:
    return ev("stream_start", request_id=rid)


def end(rid: str, status: str = "completed", **data: Any) -> Message:
    return ev("stream_end", request_id=rid, status=status, **data)


def mstart(mid: str, type_: str, tid: str | None = None, bid: str | None = None) -> Message:
    ids = {"thread_id": tid, "block_id": bid}
    return ev(
        "message_start",
        {k: v for k, v in ids.items() if v},
        message_id=mid,
        type=type_,
        **({"thread_id": tid} if tid else {}),
    )


def mend(mid: str, tid: str | None = None) -> Message:
    return ev(
        "message_end",
        {"thread_id": tid} if tid else None,
        message_id=mid,
        **({"thread_id": tid} if tid else {}),
    )


def _parallel() -> list[Message]:
    out = [
        start("par"),
        ev("thread_start", thread_id="T1", label="weather"),
        ev("thread_start", thread_id="T2", label="news"),
    ]
    a = ["Sunny ", "in ", "Paris", "."]
    b = ["Markets ", "are ", "up", "."]
    for x, y in zip(a, b, strict=True):
        out += [d("text", {"content": x}, "M1", "T1"), d("text", {"content": y}, "M1", "T2")]
    out += [
        mend("M1", "T1"),
        ev("thread_end", {"thread_id": "T1"}, thread_id="T1"),
        mend("M1", "T2"),
        ev("thread_end", {"thread_id": "T2"}, thread_id="T2"),
        d("text", {"content": "Both done."}, "M2"),
        mend("M2"),
        end("par", usage={"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}),
    ]
    return out


def _error_mid_thread() -> list[Message]:
    return [
        start("err"),
        ev("thread_start", thread_id="T1"),
        d("thinking", {"content": "Checking the "}, "M1", "T1"),
        d("thinking", {"content": "source."}, "M1", "T1"),
        mend("M1", "T1"),
        d("text", {"content": "Partial ans"}, "M2", "T1"),
        m("error", {"message": "upstream timed out", "code": "timeout"}, None, "T1"),
        ev("thread_end", {"thread_id": "T1"}, thread_id="T1", status="error"),
        end("err", "error", error="upstream timed out"),
    ]


def _cancelled() -> list[Message]:
    return [
        start("can"),
        d("text", {"content": "Counting: one, "}, "M1"),
        d("text", {"content": "two, "}, "M1"),
        end("can", "cancelled"),
    ]


def _tools_only() -> list[Message]:
    return [
        start("tools"),
        ev("block_start", {"block_id": "B1"}, block_id="B1", type="tool"),
        m(
            "tool_call",
            {"id": "call_w", "name": "get_weather", "arguments": '{"city":"Paris"}'},
            "M1",
            bid="B1",
        ),
        mend("M1"),
        m("loading", {"message": "Calling get_weather"}, "M2", bid="B1"),
        d("loading", {"done": True}, "M2", bid="B1", delta_action="merge"),
        mend("M2"),
        m(
            "tool_result",
            {"call_id": "call_w", "name": "get_weather", "content": "18°C, clear"},
            "M3",
            bid="B1",
        ),
        mend("M3"),
        ev("block_end", {"block_id": "B1"}, block_id="B1"),
        end("tools"),
    ]


def _tools_in_answer() -> list[Message]:
    """What a README agent writes: whole messages (``send``) in one block, no message_end (the
    block's end closes them): tools and text alternate and must show in that order."""
    b = {"bid": "B1"}
    return [
        start("tia"),
        ev("block_start", {"block_id": "B1"}, block_id="B1", type="llm"),
        m("thinking", {"content": "I need the weather first."}, "M1", **b),
        m(
            "tool_call",
            {"id": "call_p", "name": "get_weather", "arguments": '{"city":"Paris"}'},
            "M2",
            **b,
        ),
        m(
            "tool_result",
            {"call_id": "call_p", "name": "get_weather", "content": "sunny"},
            "M3",
            **b,
        ),
        m("text", {"content": "Paris is sunny. "}, "M4", **b),
        m(
            "tool_call",
            {"id": "call_l", "name": "get_weather", "arguments": '{"city":"Lyon"}'},
            "M5",
            **b,
        ),
        m(
            "tool_result",
            {"call_id": "call_l", "name": "get_weather", "content": {"sky": "rain"}},
            "M6",
            **b,
        ),
        d("text", {"content": "Lyon has "}, "M7", **b),
        d("text", {"content": "rain."}, "M7", **b),
        mend("M7"),
        m("thinking", {"content": "Both answered."}, "M8", **b),
        ev("block_end", {"block_id": "B1"}, block_id="B1"),
        end("tia"),
    ]


def _streamed_tools_between_text() -> list[Message]:
    """Explicit lifecycles: text, a tool call streamed in fragments, text, its result, text,
    all in one block."""
    b = {"bid": "B1"}
    return [
        start("stt"),
        ev("block_start", {"block_id": "B1"}, block_id="B1", type="llm"),
        d("text", {"content": "Let me look that up."}, "M1", **b),
        mend("M1"),
        mstart("M2", "tool_call", bid="B1"),
        d("tool_call", {"id": "call_s", "name": "search"}, "M2", delta_action="merge", **b),
        d("tool_call", {"arguments": '{"q":'}, "M2", **b),
        d("tool_call", {"arguments": '"docs"}'}, "M2", **b),
        mend("M2"),
        d("thinking", {"content": "Searching while I explain."}, "M3", **b),
        mend("M3"),
        m("tool_result", {"call_id": "call_s", "name": "search", "content": "3 hits"}, "M4", **b),
        mend("M4"),
        d("text", {"content": "Found 3 hits."}, "M5", **b),
        mend("M5"),
        ev("block_end", {"block_id": "B1"}, block_id="B1"),
        end("stt"),
    ]


def _threads_tools_text() -> list[Message]:
    """Two threads, each a tool call, its result and an answer sent whole, interleaved; then
    the answer of the main thread."""
    out = [
        start("ttt"),
        ev("thread_start", thread_id="T1", label="paris"),
        ev("thread_start", thread_id="T2", label="lyon"),
    ]
    for tid, city in (("T1", "Paris"), ("T2", "Lyon")):
        out.append(
            m(
                "tool_call",
                {"id": f"call_{tid}", "name": "get_weather", "arguments": f'{{"city":"{city}"}}'},
                "M1",
                tid,
            )
        )
    for tid, sky in (("T2", "rain"), ("T1", "sunny")):
        out.append(
            m(
                "tool_result",
                {"call_id": f"call_{tid}", "name": "get_weather", "content": sky},
                "M2",
                tid,
            )
        )
    for tid, city, sky in (("T1", "Paris", "sunny"), ("T2", "Lyon", "rain")):
        out.append(m("text", {"content": f"{city}: {sky}. "}, "M3", tid))
    out += [
        ev("thread_end", {"thread_id": "T1"}, thread_id="T1"),
        ev("thread_end", {"thread_id": "T2"}, thread_id="T2"),
        d("text", {"content": "Both cities done."}, "M4"),
        mend("M4"),
        end("ttt"),
    ]
    return out


def bstart(bid: str, type_: str, parent: str | None = None, **data: Any) -> Message:
    return ev(
        "block_start",
        {"block_id": bid},
        block_id=bid,
        type=type_,
        **({"parent_block_id": parent} if parent else {}),
        **data,
    )


def bend(bid: str, status: str = "completed", **data: Any) -> Message:
    return ev("block_end", {"block_id": bid}, block_id=bid, status=status, **data)


def _nested_subagents() -> list[Message]:
    """A planner sub-agent (relayed: its address and name) that calls a weather sub-agent (a
    framework's subgraph) nested in it, whose model call uses a tool and answers, streamed."""
    return [
        start("sub"),
        d("text", {"content": "Asking the planner."}, "M1"),
        mend("M1"),
        bstart("A1", "agent", label="Trip planner", agent="agent1qplanner", agent_name="Planner"),
        d("thinking", {"content": "Weather first."}, "M2", bid="A1"),
        mend("M2"),
        bstart("A2", "agent", "A1", label="Weather", agent_name="Weather"),
        bstart("L1", "llm", "A2", label="gpt"),
        m(
            "tool_call",
            {"id": "call_w", "name": "get_weather", "arguments": '{"city":"Paris"}'},
            "M3",
            bid="L1",
        ),
        mend("M3"),
        m(
            "tool_result",
            {"call_id": "call_w", "name": "get_weather", "content": "sunny"},
            "M4",
            bid="L1",
        ),
        mend("M4"),
        d("text", {"content": "Paris is "}, "M5", bid="L1"),
        d("text", {"content": "sunny."}, "M5", bid="L1"),
        mend("M5"),
        bend("L1"),
        bend("A2"),
        d("text", {"content": "Pack sunglasses."}, "M6", bid="A1"),
        mend("M6"),
        bend("A1"),
        d("text", {"content": "The planner is done."}, "M7"),
        mend("M7"),
        end("sub"),
    ]


def _failed_subagents() -> list[Message]:
    """A sub-agent whose block ends error (a framework's failed subgraph), a second one
    cancelled, and the caller going on to complete."""
    return [
        start("subf"),
        bstart("A1", "agent", label="Weather", agent_name="Weather"),
        d("text", {"content": "Checking"}, "M1", bid="A1"),
        mend("M1"),
        bend("A1", "error"),
        bstart("A2", "agent", label="News"),
        bend("A2", "cancelled"),
        d("text", {"content": "Without the weather, then."}, "M2"),
        mend("M2"),
        end("subf"),
    ]


def _recovered_subagent_error() -> list[Message]:
    """A relayed sub-agent's ``error`` Message inside its block (a failed relay), which the
    caller catches and answers without it: the stream completes."""
    return [
        start("subr"),
        bstart("A1", "agent", label="Weather", agent_name="Weather", agent="agent1qweather"),
        d("text", {"content": "Checking"}, "M1", bid="A1"),
        m("error", {"message": "weather service down", "code": "upstream"}, None, bid="A1"),
        bend("A1", "error", relay_status="error"),
        d("text", {"content": "Without the weather, then."}, "M2"),
        mend("M2"),
        end("subr"),
    ]


def _late_tool_names() -> list[Message]:
    return [
        start("late"),
        mstart("M1", "tool_call"),
        d("tool_call", {"arguments": '{"n":'}, "M1"),
        d("tool_call", {"arguments": " 3}"}, "M1"),
        d("tool_call", {"id": "call_count", "name": "count"}, "M1", delta_action="merge"),
        mend("M1"),
        d("text", {"content": "Counted to three."}, "M2"),
        mend("M2"),
        end("late"),
    ]


def _rewrites() -> list[Message]:
    return [
        start("rw"),
        d("text", {"content": "Hello wor"}, "M1"),
        d("text", {"content": "Hello world!"}, "M1", delta_action="replace", delta_path="content"),
        d("text", {"content": "Goodbye."}, "M1", delta_action="replace", delta_path="content"),
        mend("M1"),
        m("loading", {"message": "Thinking it over"}, "M2"),
        Message(type="thinking", message_id="M2", type_change=True),
        d("thinking", {"content": " and done"}, "M2"),
        mend("M2"),
        d("text", {"content": "The end."}, "M3"),
        mend("M3"),
        end("rw"),
    ]


def _media() -> list[Message]:
    return [
        start("media"),
        d("text", {"content": "Here is the chart:"}, "M1"),
        mend("M1"),
        m("image", {"url": "https://example.com/chart.png", "alt": "chart"}, "M2"),
        m("audio", {"url": "https://example.com/note.mp3", "format": "mp3"}, "M3"),
        m("video", {"url": "https://example.com/clip.mp4"}, "M4"),
        d("text", {"content": "That is all."}, "M5"),
        mend("M5"),
        end("media"),
    ]


def _unicode() -> list[Message]:
    pieces = ["Grüße 👋🏽", " 你好，", "世界！", " e\u0301", "👨‍👩‍👧", " 🇫🇷 ok"]
    out = [start("uni")]
    out += [d("text", {"content": p}, "M1") for p in pieces]
    out += [mend("M1"), d("thinking", {"content": "思考中…🤔"}, "M2"), mend("M2"), end("uni")]
    return out


def _custom() -> list[Message]:
    return [
        start("custom"),
        m("weather_card", {"city": "Paris", "days": [{"t": 18}], "meta": {"src": "x"}}, "M1"),
        d("weather_card", {"days": [{"t": 19}]}, "M1", delta_path="days"),
        d(
            "weather_card",
            {"days": {"0": {"t": 17}}},
            "M1",
            delta_path="days.0.t",
            delta_action="set",
        ),
        d(
            "weather_card",
            {"meta": {"updated": True}},
            "M1",
            delta_path="meta",
            delta_action="merge",
        ),
        d("weather_card", {"city": " (FR)"}, "M1", delta_path="city"),
        mend("M1"),
        d("text", {"content": "Card sent."}, "M2"),
        mend("M2"),
        end("custom"),
    ]


def _cut() -> list[Message]:
    return [
        start("cut"),
        d("text", {"content": "Starting the ans"}, "M1"),
        m("tool_call", {"id": "call_a", "name": "lookup", "arguments": '{"a":'}, "M2"),
    ]


def _replay() -> list[Message]:
    """A real writer's stream: the embedded replay model (blocks, reasoning, tools with progress
    and results, parallel threads, a long markdown answer), as fast as it goes."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from agent_stream.sources.replay import ReplayModel
    from agent_stream.writer import collect

    def run() -> list[Message]:
        return asyncio.run(
            collect(lambda out: ReplayModel(rate=0)("weather in Paris", out), request_id="replay")
        )

    with ThreadPoolExecutor(1) as pool:  # its own event loop, whoever calls
        return pool.submit(run).result()


CORPUS: dict[str, Any] = {
    "parallel_threads": _parallel,
    "error_mid_thread": _error_mid_thread,
    "cancelled": _cancelled,
    "tools_only": _tools_only,
    "tools_in_answer": _tools_in_answer,
    "streamed_tools_text": _streamed_tools_between_text,
    "threads_tools_text": _threads_tools_text,
    "late_tool_names": _late_tool_names,
    "nested_subagents": _nested_subagents,
    "failed_subagents": _failed_subagents,
    "recovered_subagent_error": _recovered_subagent_error,
    "rewrites_retypes": _rewrites,
    "media": _media,
    "unicode_emoji": _unicode,
    "custom_structured": _custom,
    "cut_stream": _cut,
    "writer_replay": _replay,
}


def corpus() -> dict[str, list[Message]]:
    """Every stream of the corpus by name."""
    return {name: make() for name, make in CORPUS.items()}


def _approval_paused() -> list[Message]:
    """A reply that pauses: text, a tool call, then the approval it waits for (a pydantic-ai
    deferred tool's ``user_input``, with its review card)."""
    from agent_stream.sources.approvals import asking

    return [
        start("hitl"),
        m("text", {"content": "I will delete a."}, "M1"),
        mend("M1"),
        m(
            "tool_call",
            {"id": "call_del", "name": "delete_file", "arguments": '{"path":"a"}'},
            "M2",
        ),
        mend("M2"),
        asking("call_del", "delete_file", {"path": "a"}).model_copy(update={"message_id": "M3"}),
        end("hitl"),
    ]


def _approval_resumed() -> list[Message]:
    """The reply to the approval: the tool ran, and the answer."""
    return [
        start("hitl-2"),
        m(
            "tool_result",
            {"call_id": "call_del", "name": "delete_file", "content": "deleted a"},
            "R1",
        ),
        mend("R1"),
        m("text", {"content": "Deleted a."}, "R2"),
        end("hitl-2"),
    ]


# Human in the loop: (the reply that pauses, the reply to its resume) by name. Read by AG-UI's
# client only (a run that ends with interrupts, then a run resuming them), so the other wires'
# checks stay those of the corpus.
HITL: dict[str, Any] = {"approval_interrupt": (_approval_paused, _approval_resumed)}


def hitl() -> dict[str, tuple[list[Message], list[Message]]]:
    """Every human-in-the-loop pair by name."""
    return {name: (ask(), resume()) for name, (ask, resume) in HITL.items()}


# -- round trips: a stream that pauses, and how it goes on once the client answered -----------
APPROVAL_CALL = "call_del"


def _approval_pause() -> list[Message]:
    """An AI SDK reply that cites a web page, runs a tool call up to its approval and pauses
    (the pydantic-ai source's ``user_input``, card and all), with the model and usage."""
    from agent_stream.sources.approvals import asking

    ask = asking(APPROVAL_CALL, "delete_file", {"path": "a"})
    cite = {"type": "web_search_result_location", "url": "https://example.org/a", "title": "A"}
    return [
        start("pause"),
        bstart("B1", "llm", model="m-1"),
        d("text", {"content": "Deleting it."}, "M1", bid="B1"),
        d("text", {"citations": [cite]}, "M1", bid="B1", delta_path="citations"),
        m("citation", {"title": "Policy", "document_title": "Policy"}, "M2", bid="B1"),
        m(
            "tool_call",
            {"id": APPROVAL_CALL, "name": "delete_file", "arguments": '{"path": "a"}'},
            "M3",
            bid="B1",
        ),
        bend("B1"),
        m("user_input", ask.props, "M4"),
        end("pause", usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}),
    ]


def _approval_answered(approved: bool) -> list[Message]:
    """How the paused reply goes on: the tool's result (or the refusal) and a last text."""
    said = "deleted a" if approved else "The user refused: keep it"
    return [
        start("answer"),
        m("tool_result", {"call_id": APPROVAL_CALL, "name": "delete_file", "content": said}, "M1"),
        d("text", {"content": "Done." if approved else "Kept it."}, "M2"),
        mend("M2"),
        end("answer"),
    ]


ROUND_TRIPS: dict[str, Any] = {"approval_pause": (_approval_pause, _approval_answered)}


def round_trips() -> dict[str, tuple[list[Message], dict[bool, list[Message]]]]:
    """Each round trip's paused stream, and its continuation by the user's decision."""
    return {
        name: (pause(), {ok: answered(ok) for ok in (True, False)})
        for name, (pause, answered) in ROUND_TRIPS.items()
    }


_TYPES = [
    "text",
    "thinking",
    "loading",
    "tool_call",
    "tool_result",
    "error",
    "image",
    "refusal",
    "weather_card",
]
_EVENTS = ["thread_start", "thread_end", "block_start", "block_end", "message_start", "message_end"]


def _fuzz_one(rnd: Any, i: int) -> list[Message]:
    """A random but well-formed stream: interleaved threads, blocks (B2 a sub-agent in B1),
    deltas of every action, retypes, tool calls with late names, and one of the four endings."""
    out = [start(f"fz{i}")]
    for _ in range(rnd.randint(3, 30)):
        tid = rnd.choice([None, "T1", "T2"])
        mid = rnd.choice(["M1", "M2", "M3"])
        if rnd.random() < 0.25:
            name = rnd.choice(_EVENTS)
            if name.startswith("thread") and tid is None:
                tid = "T1"
            data: dict[str, Any] = {
                "message_id": mid,
                "type": rnd.choice(_TYPES),
                "block_id": rnd.choice(["B1", "B2"]),
                "status": rnd.choice(["completed", "error"]),
            }
            if tid:
                data["thread_id"] = tid
            if name == "block_start" and data["block_id"] == "B2":  # B2: a sub-agent, in B1
                data.update(type="agent", parent_block_id="B1", agent_name="helper")
            out.append(ev(name, {"thread_id": tid} if tid else None, **data))
            continue
        t = rnd.choice(_TYPES)
        bid = rnd.choice([None, "B1", "B2"])
        if t in ("text", "thinking", "refusal"):
            action = rnd.choice(["append", "append", "append", "replace"])
            out.append(
                d(
                    t,
                    {"content": rnd.choice(["a", "bé", " 🙂", "\n", "xyz"])},
                    mid,
                    tid,
                    bid,
                    delta_action=action,
                    delta_path="content",
                )
            )
        elif t == "tool_call":
            props = rnd.choice(
                [
                    {"arguments": '{"k":'},
                    {"arguments": "1}"},
                    {"name": "f", "id": f"c{rnd.randint(1, 3)}"},
                ]
            )
            out.append(
                d(t, props, mid, tid, bid, delta_action="merge" if "name" in props else None)
            )
        elif t == "tool_result":
            out.append(m(t, {"call_id": f"c{rnd.randint(1, 3)}", "content": "ok"}, mid, tid))
        elif t == "error":
            out.append(m(t, {"message": "boom", "code": "x"}, None, tid))
        elif t == "image":
            out.append(m(t, {"url": "https://example.com/a.png"}, mid, tid))
        elif t == "loading":
            out.append(m(t, {"message": "working"}, mid, tid, bid))
        else:
            out.append(d(t, {"rows": [rnd.randint(0, 9)]}, mid, tid, bid, delta_path="rows"))
    ending = rnd.choice(["completed", "error", "cancelled", "cut"])
    if ending != "cut":
        out.append(end(f"fz{i}", ending, **({"error": "failed"} if ending == "error" else {})))
    return out


def fuzz(n: int, seed: int = 12) -> dict[str, list[Message]]:
    """``n`` random streams, the same for the same seed."""
    import random

    rnd = random.Random(seed)
    return {f"fuzz_{i:02d}": _fuzz_one(rnd, i) for i in range(n)}
