"""Protection is per agent: importing agent_stream, building a StreamingChat, building a local
agent or protecting an agent changes no attribute of any uagents class or module, and a stock
agent in the same process behaves exactly as uagents' own; the protected agent, served over
real HTTP on 127.0.0.1, is not silenced by a malformed ChatMessage."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import types
import uuid
from typing import Any

from hostile_peer import CHAT, envelope, post, valid_question
from uagents import Agent, Context, Protocol
from uagents.asgi import ASGIServer
from uagents.communication import Dispenser
from uagents.dispatch import dispatcher
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    chat_protocol_spec,
)
from uagents_core.identity import Identity
from uagents_snapshot import changed, snapshot

# What uagents' own inbox task dies of (an unknown top-level key: a TypeError it does not catch).
MALFORMED = json.dumps(
    {
        "timestamp": "2026-01-01T00:00:00+00:00",
        "msg_id": str(uuid.uuid4()),
        "content": [{"type": "text", "text": "hi"}],
        "evil": 1,
    }
)


CHILD = """
import asyncio, sys
sys.path.insert(0, {tests!r})
from uagents_snapshot import snapshot, changed
import uagents.agent, uagents.asgi, uagents.communication, uagents.dispatch, uagents.context
import uagents.network, uagents_core.identity
before = snapshot()
from uagents import Agent
import agent_stream, agent_stream.uagents
from agent_stream.uagents import StreamingChat, local_agent, protect
from agent_stream.uagents.local._agents import free_port

async def main():
    chat = StreamingChat()
    agent = local_agent("per agent child local agent", free_port(), directory=None)
    agent.include(chat, publish_manifest=True)
    stock = Agent(name="stock", seed="per agent child stock agent", port=free_port(),
                  enable_agent_inspector=False, loop=asyncio.get_running_loop())
    protect(stock)

asyncio.run(main())
print("CHANGED", changed(before, snapshot()))
"""


def test_importing_and_protecting_changes_nothing_of_uagents(tmp_path: Any) -> None:
    """In a fresh process: snapshot uagents before agent_stream is imported, then import it,
    build a StreamingChat and a local agent, protect a stock Agent, and compare."""
    tests = str(__import__("pathlib").Path(__file__).parent.parent)
    code = CHILD.format(tests=tests)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": f"{tests}:{tests}/uagents", "PATH": ""},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "CHANGED []" in done.stdout, done.stdout


def test_a_stock_agent_and_a_protected_agent_in_one_process(
    tmp_path: Any, monkeypatch: Any
) -> None:
    from agent_stream.uagents import ChatRequest, StreamingChat, local_agent, protect, run_agent
    from agent_stream.uagents._protection import guard_of
    from agent_stream.uagents.local._agents import endpoint_for, free_port
    from agent_stream.writer import StreamWriter

    monkeypatch.chdir(tmp_path)  # agent storage files land here
    handle_message, asgi_call = Agent.handle_message, ASGIServer.__call__
    dispenser_methods = dict(vars(Dispenser))
    before = snapshot()

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        await out.text(f"You asked: {request.text}.")

    # -- the protected agent, served on 127.0.0.1 in a thread of its own ---------------------
    port = free_port()
    result: dict[str, Any] = {}
    built = threading.Event()

    def serve() -> None:
        server = local_agent("per agent protected server", port, directory=None)
        server.include(StreamingChat(respond), publish_manifest=True)
        result["server"] = server
        built.set()

        async def main(ctx: Context) -> None:
            loop = asyncio.get_running_loop()
            hostile = Identity.from_seed("per agent hostile peer", 0)
            result["status"] = await loop.run_in_executor(
                None,
                post,
                endpoint_for(port),
                envelope(server.address, CHAT, MALFORMED, identity=hostile),
            )
            chat = StreamingChat()
            client = local_agent("per agent asking client", free_port(), directory=None)
            client.include(chat, publish_manifest=True)
            client.start_message_dispenser()
            client.start_message_receivers()
            try:
                reply = await chat.ask(
                    client._build_context(), server.address, "still there?", timeout=10
                )
                await reply.wait(11)
                result["reply"] = (reply.completed, reply.text())
            finally:
                dispatcher.unregister(client.address, client)

        run_agent(server, main)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert built.wait(30)
    thread.join(60)
    assert not thread.is_alive()
    server = result["server"]
    dispatcher.unregister(server.address, server)
    assert result["status"] == 200  # the envelope was fine; its payload was not
    assert result["reply"] == (True, "You asked: still there?.")
    guard = guard_of(server)
    assert guard is not None and guard.stats["dropped"] == 1

    # -- a stock agent in the same process: uagents' own behaviour, the inbox killer included
    async def stock_agent() -> tuple[Agent, BaseException | None]:
        got: list[str] = []
        proto = Protocol(spec=chat_protocol_spec)

        async def on_chat(ctx: Context, sender: str, msg: ChatMessage) -> None:
            got.append(msg.text())

        async def on_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
            pass

        proto.on_message(ChatMessage)(on_chat)
        proto.on_message(ChatAcknowledgement)(on_ack)
        stock = Agent(
            name="stock",
            seed="per agent stock agent seed",
            port=free_port(),
            enable_agent_inspector=False,
            loop=asyncio.get_running_loop(),
        )
        protect(
            Agent(
                name="other",
                seed="per agent another protected agent",
                port=free_port(),
                enable_agent_inspector=False,
                loop=asyncio.get_running_loop(),
            )
        )
        stock.include(proto)
        assert "handle_message" not in vars(stock)
        assert type(stock._server) is ASGIServer and type(stock._dispenser) is Dispenser
        before_tasks = asyncio.all_tasks()
        stock.start_message_receivers()
        (inbox,) = asyncio.all_tasks() - before_tasks
        await dispatcher.dispatch_msg(
            "agent1x", stock.address, CHAT, valid_question("fine"), uuid.uuid4()
        )
        await asyncio.sleep(0.05)
        assert got == ["fine"]
        await dispatcher.dispatch_msg("agent1x", stock.address, CHAT, MALFORMED, uuid.uuid4())
        await asyncio.sleep(0.05)
        assert inbox.done()
        return stock, inbox.exception()

    stock, died_of = asyncio.run(stock_agent())
    dispatcher.unregister(stock.address, stock)
    assert isinstance(died_of, TypeError)  # the stock agent's inbox died, as in stock uagents

    after = snapshot()
    assert changed(before, after) == []
    assert Agent.handle_message is handle_message and ASGIServer.__call__ is asgi_call
    assert dict(vars(Dispenser)) == dispenser_methods
    assert isinstance(Agent.handle_message, types.FunctionType)
