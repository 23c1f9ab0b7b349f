"""The gateway's pure parts: the in-process store's bounds, resume cursors and the reopening
preface, questions from each client's conversation, the safety checks of the settings."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_stream.adapters.agui import encode_messages as agui_encode
from agent_stream.conversation import Turn
from agent_stream.gateway.config import KEYS_ENV, GatewayConfig, is_loopback
from agent_stream.gateway.middleware import HTTPError
from agent_stream.gateway.questions import Question, from_aisdk, from_openai
from agent_stream.gateway.store import MemoryStore, StoreFull, end_entry, parse_end
from agent_stream.gateway.views import Reopen, events, parse_cursor
from agent_stream.message import Message
from agent_stream.writer import StreamWriter


async def _messages() -> list[Message]:
    out: list[Message] = []

    async def sink(m: Message) -> None:
        out.append(m)

    async with StreamWriter(sink, request_id="q1") as w, w.block("llm", label="A") as b:
        async with b.message("thinking") as m:
            await m.append("hmm ")
            await m.append("yes")
        async with b.message("text") as m:
            for t in ("one ", "two ", "three"):
                await m.append(t)
    return out


async def test_memory_store_bounds_and_expiry() -> None:
    s = MemoryStore(max_entries=3, max_reply_bytes=100, max_bytes=150)
    await s.create("a", {"format": "agui"})
    await s.append("a", ["x" * 10, "y" * 10])
    with pytest.raises(StoreFull):
        await s.append("a", ["z", "w"])  # 4 entries
    with pytest.raises(StoreFull):
        await s.append("a", ["z" * 90])  # over 100 bytes
    await s.append("a", [end_entry("completed")])
    assert await s.ended("a")
    await s.create("b", {})
    await s.append("b", ["b" * 90])
    await s.create("c", {})
    await s.append("c", ["c" * 90])  # over max_bytes: the oldest finished log goes
    assert await s.resolve("a") is None and await s.resolve("b") == "b"
    await s.alias("run-b", "b")
    assert await s.resolve("run-b") == "b"
    await s.drop("b", 0.0)
    assert await s.resolve("run-b") is None and await s.meta("b") is None


async def test_memory_store_forgets_exactly_the_logs_whose_drop_time_passed() -> None:
    import time

    s = MemoryStore()
    for i in range(200):
        await s.create(f"r{i}", {})
    # every third dropped at once, every third twice (later, then sooner), the rest kept
    for i in range(0, 200, 3):
        await s.drop(f"r{i}", 0.0)
    for i in range(1, 200, 3):
        await s.drop(f"r{i}", 30.0)
        await s.drop(f"r{i}", 0.05)  # the latest drop call decides
    await s.drop("r2", 0.05)
    await s.drop("r2", 30.0)  # dropped again, later: kept for now
    assert len(s) == 200 - 67
    time.sleep(0.06)
    kept = {f"r{i}" for i in range(2, 200, 3)}
    assert len(s) == len(kept)
    assert {r for r in (f"r{i}" for i in range(200)) if await s.meta(r) is not None} == kept


async def test_memory_store_read_is_live() -> None:
    s = MemoryStore()
    await s.create("r", {})
    await s.append("r", ["1"])
    got: list[str] = []

    async def follow() -> None:
        async for e in s.read("r"):
            got.append(e)

    t = asyncio.create_task(follow())
    await asyncio.sleep(0.01)
    assert got == ["1"] and not t.done()
    await s.append("r", ["2", end_entry("cancelled", "stop")])
    await asyncio.wait_for(t, 1)
    assert got[:2] == ["1", "2"] and parse_end(got[2]) == {"status": "cancelled", "error": "stop"}


def test_cursor_parsing() -> None:
    assert parse_cursor("rabc:12") == ("rabc", 12)
    assert parse_cursor("a:b:3") == ("a:b", 3)
    for bad in (None, "", "r1", "r1:", ":4", "r1:x"):
        assert parse_cursor(bad) is None


async def test_resume_preface_reopens_what_was_open() -> None:
    msgs = await _messages()
    full = agui_encode(msgs, thread_id="t", run_id="run")
    s = MemoryStore()
    await s.create("r", {})
    await s.append("r", [m.to_json() for m in msgs] + [end_entry("completed")])
    kinds = [e.type.value for e in full]
    k = kinds.index("TEXT_MESSAGE_CONTENT")  # mid-message
    got = [
        (n, e)
        async for n, e in events(s, "r", "agui", {"thread_id": "t", "run_id": "run"}, after=k)
    ]
    preface = [e for n, e in got if n == k]
    assert [e.type.value for e in preface] == ["RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START"]
    assert [e for n, e in got if n > k] == full[k + 1 :]
    r = Reopen("aisdk")
    for c in (
        {"type": "start"},
        {"type": "start-step"},
        {"type": "text-start", "id": "a"},
        {"type": "text-end", "id": "a"},
        {"type": "reasoning-start", "id": "b"},
    ):
        r.see(c)
    assert [c["type"] for c in r.preface()] == ["start", "start-step", "reasoning-start"]
    assert Reopen("standard").preface() == []


def test_questions_from_each_conversation() -> None:
    assert from_openai([{"role": "user", "content": "hi"}]) == Question("hi", ())
    q = from_openai(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "a"}]},
            {"role": "assistant", "content": "b"},
            {"role": "tool", "content": "left out", "tool_call_id": "t"},
            {"role": "developer", "content": "Cite."},
            {"role": "user", "content": "c"},
            {"role": "assistant", "content": "after the question: left out"},
        ]
    )
    assert q == Question(
        "c",
        (
            Turn("system", "Be brief."),
            Turn("user", "a"),
            Turn("assistant", "b"),
            Turn("system", "Cite."),
        ),
    )
    assert (
        from_aisdk(
            [
                {
                    "role": "user",
                    "parts": [{"type": "text", "text": "x"}, {"type": "file", "url": "u"}],
                }
            ]
        ).text
        == "x"
    )
    for bad in ([], [{"role": "assistant", "content": "no question"}], "nope"):
        with pytest.raises(HTTPError):
            from_openai(bad)


def test_settings_are_safe_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEYS_ENV, raising=False)
    GatewayConfig().check()
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback("0.0.0.0")
    with pytest.raises(ValueError, match="--api-key"):
        GatewayConfig(host="0.0.0.0").check()
    GatewayConfig(host="0.0.0.0", api_keys=["k"]).check()
    monkeypatch.setenv(KEYS_ENV, "a, b")
    assert GatewayConfig(host="0.0.0.0").keys() == ["a", "b"]
    for bad in (
        {"cors_origins": ["*"]},
        {"resume_store": "mysql://x"},
        {"resume_window": 0},
        {"max_replies_per_key": 0},
    ):
        with pytest.raises(ValueError):
            GatewayConfig(**bad).check()


def test_without_the_extra_the_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent_stream.cli import main

    monkeypatch.setitem(sys.modules, "starlette", None)
    assert main(["gateway"]) == 2
    assert "pip install 'agent-stream[gateway]'" in capsys.readouterr().err


async def test_keepalive_comments_during_silence() -> None:
    from agent_stream.gateway.app import keepalive

    async def slow() -> AsyncIterator[str]:
        yield "data: 1\n\n"
        await asyncio.sleep(0.25)
        yield "data: 2\n\n"

    got = [x async for x in keepalive(slow(), 0.1)]
    assert got[0] == "data: 1\n\n" and got[-1] == "data: 2\n\n"
    assert 1 <= got.count(": keepalive\n\n") <= 3

    async def broken() -> AsyncIterator[str]:
        yield "data: 1\n\n"
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        [x async for x in keepalive(broken(), 1.0)]


def test_a_gateway_keeps_the_empty_store_it_is_given(tmp_path: Path) -> None:
    """An empty MemoryStore is falsy (it has a length): it must still be the one used, with
    its own limits, not replaced by a default one."""
    from agent_stream.gateway.core import Gateway
    from agent_stream.gateway.link import Agents
    from agent_stream.uagents import LocalDirectory

    store = MemoryStore(max_entries=3)
    gw = Gateway(GatewayConfig(), Agents([], LocalDirectory(tmp_path / "a.json")), None, store)  # type: ignore[arg-type]
    assert gw.store is store and gw.runs.store is store


async def test_a_live_read_says_when_it_was_quiet_and_wakes_at_once_for_an_entry() -> None:
    s = MemoryStore()
    await s.create("r", {"format": "native", "options": {}})
    got: list[tuple[float, str]] = []
    start = asyncio.get_running_loop().time()

    async def follow() -> None:
        async for e in s.read("r", idle=0.1):
            got.append((asyncio.get_running_loop().time() - start, e))

    reader = asyncio.create_task(follow())
    await asyncio.sleep(0.35)
    await s.append("r", ['{"type":"text","props":{"content":"hi"}}'])
    appended = asyncio.get_running_loop().time() - start
    await asyncio.sleep(0)  # the reader's next turn
    await asyncio.sleep(0)
    assert got[-1][1].startswith('{"type":"text"') and got[-1][0] - appended < 0.05
    await s.append("r", [end_entry("completed")])
    await asyncio.wait_for(reader, 1)
    quiet = [t for t, e in got if e == ""]
    assert 2 <= len(quiet) <= 4 and quiet[0] >= 0.09
    assert [e for _, e in got if e][-1] == end_entry("completed")
    plain = [e async for e in s.read("r")]  # without idle: the entries only
    assert "" not in plain and len(plain) == 2


async def test_the_sse_frames_of_a_quiet_reply_carry_keepalive_comments() -> None:
    from agent_stream.gateway.views import framed

    s = MemoryStore()
    await s.create("r", {"format": "native", "options": {}})

    async def later() -> None:
        await asyncio.sleep(0.3)
        await s.append("r", [Message(type="text", props={"content": "hi"}).to_json()])
        await s.append("r", [end_entry("completed")])

    writer = asyncio.create_task(later())
    got = [x async for x in framed(s, "r", "native", {}, keepalive=0.1)]
    await writer
    assert 2 <= got.count(": keepalive\n\n") <= 3 and got.index(": keepalive\n\n") == 0
    assert any('"hi"' in x for x in got) and all(x.startswith(("id: r:", ": ")) for x in got)
    lines = [x async for x in framed(s, "r", "native", {}, sse=False, keepalive=0.1)]
    assert ": keepalive\n\n" not in lines  # JSON lines: no SSE comments


def test_the_app_imports_every_wire_at_start_not_at_its_first_reply() -> None:
    """A wire's modules imported on its first reply held every stream of a busy gateway just
    as the first texts came; building the app imports them (a fresh interpreter shows it)."""
    code = """
import sys
import time
from agent_stream.adapters import registry
from agent_stream.gateway.app import build_app
from agent_stream.gateway.config import GatewayConfig
from agent_stream.gateway.core import Gateway
from agent_stream.gateway.link import Agents
from agent_stream.uagents import LocalDirectory

refs = {w.encoder.partition(":")[0] for w in registry.wires()}
refs |= {f.partition(":")[0] for w in registry.wires() for f in w.frames.values()}
before = sorted(r for r in refs if r in sys.modules)
build_app(Gateway(GatewayConfig(), Agents([], LocalDirectory()), link=None), with_a2a=False)
refs.add("anyio._backends._asyncio")  # a streaming response's task group needs it
after = sorted(r for r in refs if r not in sys.modules)
print(len(refs), len(before), after)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split(maxsplit=2)
    wires, imported_before, missing_after = int(out[0]), int(out[1]), out[2].strip()
    assert imported_before < wires  # some were not imported by merely importing the gateway
    assert missing_after == "[]"


async def test_what_was_appended_at_once_is_framed_as_one_write_with_every_event_and_id() -> None:
    """A busy gateway writes a reply's ready events to its client in one write (one SSE text),
    not one write per event; the events and their ``id:`` lines are those read one by one."""
    from agent_stream.gateway.views import framed

    msgs = await _messages()
    s = MemoryStore()
    await s.create("r", {})
    await s.append("r", [m.to_json() for m in msgs[:3]])
    await s.append("r", [m.to_json() for m in msgs[3:]] + [end_entry("completed")])
    one_by_one = [f"id: r:{n}\n" async for n, _ in events(s, "r", "native", {})]
    writes = [t async for t in framed(s, "r", "native", {})]
    # the two appends were both there when the reader came: one batch, one write
    assert len(writes) == 1
    ids = [line for line in writes[0].splitlines() if line.startswith("id: ")]
    assert ids == [f.splitlines()[0] for f in one_by_one]
    assert len(ids) == len(msgs)  # the native wire: one event per Message


async def test_a_live_reader_gets_each_append_as_one_batch_and_a_long_log_in_bounded_ones() -> None:
    from agent_stream.gateway.store import READ_BATCH

    s = MemoryStore()
    await s.create("r", {})
    got: list[list[str]] = []

    async def follow() -> None:
        async for b in s.read_batches("r"):
            got.append(b)

    reader = asyncio.create_task(follow())
    await asyncio.sleep(0)
    await s.append("r", ["a", "b", "c"])
    await asyncio.sleep(0.01)
    await s.append("r", ["d"])
    await asyncio.sleep(0.01)
    await s.append("r", [end_entry("completed")])
    await asyncio.wait_for(reader, 1)
    assert got == [["a", "b", "c"], ["d"], [end_entry("completed")]]
    # a resume of a long log: every entry once, in order, no batch over READ_BATCH
    s2 = MemoryStore()
    await s2.create("L", {})
    many = [str(i) for i in range(2 * READ_BATCH + 7)] + [end_entry("completed")]
    await s2.append("L", many)
    batches = [b async for b in s2.read_batches("L", start=5)]
    assert [e for b in batches for e in b] == many[5:]
    assert max(map(len, batches)) <= READ_BATCH


def test_finished_runs_are_kept_for_the_window_and_forgotten_oldest_first() -> None:
    from agent_stream.gateway.link import AgentRef
    from agent_stream.gateway.runs import Run, Runs

    runs = Runs(link=None, store=MemoryStore(), window=60.0)  # type: ignore[arg-type]
    agent = AgentRef("llm", "agent1q")
    now = time.monotonic()

    def ended(i: int, ago: float) -> Run:
        return Run(id=f"r{i}", agent=agent, key="k", question="q", ended_at=now - ago)

    for i in range(1000):  # ended 100 s to ~0 s ago, in order
        runs._remember(ended(i, 100.0 - i * 0.1))
    # each end forgot those past the window: the ones that ended over 60 s ago are gone
    assert [r for r in runs.finished.values() if now - r.ended_at > 61.0] == []  # type: ignore[operator]
    assert runs.get("r999") is not None and runs.get("r0") is None
    kept = len(runs.finished)
    assert 590 <= kept <= 610, kept
