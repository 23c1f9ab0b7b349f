"""Every uagents internal agent_stream relies on is checked: removed or changed, it is a
startup error naming it and the installed uagents version, never a silent change."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

import pytest
import uagents.agent
import uagents.asgi
import uagents.context
from uagents import Agent
from uagents.asgi import ASGIServer
from uagents.communication import Dispenser
from uagents.dispatch import Dispatcher, dispatcher
from uagents_core.envelope import Envelope

from agent_stream.uagents import _compat, local_agent
from agent_stream.uagents._compat import UagentsCompatError
from agent_stream.uagents._protection import is_protected, protect
from agent_stream.uagents.local._agents import free_port

VERSION = version("uagents")


def named(internal: str) -> Any:
    return pytest.raises(UagentsCompatError, match=re.escape(f"uagents {VERSION}: {internal}"))


CLASS_INTERNALS: list[tuple[str, Any, str]] = [
    ("Agent._build_context", Agent, "_build_context"),
    ("Agent._update_agent_status", Agent, "_update_agent_status"),
    ("Agent._process_message_queue", Agent, "_process_message_queue"),
    ("Agent.handle_message", Agent, "handle_message"),
    ("ASGIServer.__call__", ASGIServer, "__call__"),
    ("Dispenser.run / add_envelope", Dispenser, "run"),
    ("Dispenser.run / add_envelope", Dispenser, "add_envelope"),
    ("dispatcher.sinks", Dispatcher, "sinks"),
    ("ASGIServer.serve using HOST", uagents.asgi, "HOST"),
    ("Agent.__init__ calling get_almanac_contract", uagents.agent, "get_almanac_contract"),
    ("InternalContext._session", uagents.context.InternalContext, "session"),
]


@pytest.fixture
def agent() -> Iterator[Agent]:
    a = local_agent("compat test agent seed", free_port(), directory=None)
    try:
        yield a
    finally:
        dispatcher.unregister(a.address, a)


AGENT_INTERNALS = [
    ("Agent._models", "_models"),
    ("Agent._message_queue", "_message_queue"),
    ("Agent._dispenser", "_dispenser"),
    ("Agent._server", "_server"),
    ("Agent._loop", "_loop"),
    ("Agent._dispenser_task", "_dispenser_task"),
    ("Agent._port", "_port"),
    ("Agent._identity", "_identity"),
    ("Agent._resolver", "_resolver"),
    ("Agent._storage", "_storage"),
]


async def _no_envelope(self: Any, scope: Any, receive: Any, send: Any) -> None:
    return None


async def _dispatches_another_way(self: Any, scope: Any, receive: Any, send: Any) -> None:
    Envelope.model_validate(scope)  # parses envelopes as uagents does, hands them on another way


async def _handles_another_way(self: Any, *args: Any) -> None:
    return None


def _signs_another_way(self: Any, identity: Any) -> None:
    self.signature = identity.sign(b"")


#: Internals a uagents would break by changing a function: (name, owner, attribute, stand-in).
CHANGED_INTERNALS: list[tuple[str, Any, str, Any]] = [
    ("Agent._build_context passing _identity", Agent, "_build_context", lambda self: None),
    ("Envelope.sign using sign_digest", Envelope, "sign", _signs_another_way),
    ("ASGIServer.__call__ using Envelope", ASGIServer, "__call__", _no_envelope),
    (
        "ASGIServer.__call__ dispatching with dispatcher",
        ASGIServer,
        "__call__",
        _dispatches_another_way,
    ),
    (
        "InternalContext._session",
        uagents.context.InternalContext,
        "session",
        property(lambda self: None),
    ),
    (
        "Agent._process_single_message parsing with _models",
        Agent,
        "_process_single_message",
        _handles_another_way,
    ),
    (
        "Context.send building the digest then calling send_raw",
        uagents.context.ExternalContext,
        "send",
        _handles_another_way,
    ),
]


def test_the_installed_uagents_passes_and_every_internal_has_a_test_here(agent: Agent) -> None:
    _compat.check()
    _compat.check_agent(agent)
    tested = (
        {c[0] for c in CLASS_INTERNALS}
        | {a[0] for a in AGENT_INTERNALS}
        | {c[0] for c in CHANGED_INTERNALS}
    )
    assert tested | {"asyncio.Queue._queue"} == set(_compat.INTERNALS)


@pytest.mark.parametrize(
    "internal,owner,attr", CLASS_INTERNALS, ids=[f"{c[0]}:{c[2]}" for c in CLASS_INTERNALS]
)
def test_a_missing_class_internal_is_named(
    monkeypatch: pytest.MonkeyPatch, agent: Agent, internal: str, owner: Any, attr: str
) -> None:
    monkeypatch.delattr(owner, attr)
    with named(internal):
        _compat.check()
    with named(internal):
        protect(agent)


@pytest.mark.parametrize(
    "internal,owner,attr,stand_in", CHANGED_INTERNALS, ids=[c[0] for c in CHANGED_INTERNALS]
)
def test_a_function_that_no_longer_uses_an_internal_is_named(
    monkeypatch: pytest.MonkeyPatch,
    agent: Agent,
    internal: str,
    owner: Any,
    attr: str,
    stand_in: Any,
) -> None:
    monkeypatch.setattr(owner, attr, stand_in)
    with named(internal):
        _compat.check()
    with named(internal):
        protect(agent)


def test_an_init_that_no_longer_queries_the_ledger_this_way_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = Agent.__init__

    def renamed(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)

    monkeypatch.setattr(Agent, "__init__", renamed)
    monkeypatch.setattr(
        _compat, "agent_init_without_ledger", _compat.agent_init_without_ledger.__wrapped__
    )
    with named("Agent.__init__ calling get_almanac_contract"):
        _compat.check()
    with named("Agent.__init__ using get_almanac_contract"):
        local_agent("compat renamed init seed", free_port(), directory=None)


def test_a_changed_attribute_is_named_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Agent, "_update_agent_status", lambda self, active: None)  # not async
    with named("Agent._update_agent_status"):
        _compat.check()
    monkeypatch.undo()

    async def handle_message(self: Any, *args: Any) -> None:  # no longer queues
        return None

    monkeypatch.setattr(Agent, "handle_message", handle_message)
    with named("Agent.handle_message"):
        _compat.check()


@pytest.mark.parametrize("internal,attr", AGENT_INTERNALS)
def test_a_missing_agent_internal_is_named(internal: str, attr: str) -> None:
    agent = Agent.__new__(Agent)  # an agent without Agent.__init__'s attributes...
    port = free_port()
    built = local_agent("compat missing attribute seed", port, directory=None)
    try:
        agent.__dict__.update(
            {
                k: v
                for k, v in vars(built).items()
                if k not in (attr, "handle_message", "_agent_stream_guard")
            }
        )
        with named(internal):
            _compat.check_agent(agent)
        with named(internal):
            protect(agent)
        assert not is_protected(agent)
    finally:
        dispatcher.unregister(built.address, built)


def test_a_queue_without_its_items_is_named(agent: Agent) -> None:
    fresh = Agent.__new__(Agent)
    fresh.__dict__.update(vars(agent))
    queue: asyncio.Queue[Any] = asyncio.Queue()
    del queue._queue  # type: ignore[attr-defined]
    fresh.__dict__["_message_queue"] = queue
    with named("asyncio.Queue._queue"):
        _compat.check_agent(fresh)


def test_a_local_agent_checks_again_when_it_starts(
    monkeypatch: pytest.MonkeyPatch, agent: Agent
) -> None:
    del agent.__dict__["_models"]
    with named("Agent._models"):
        agent.setup()


def test_a_variant_of_a_function_that_does_not_use_the_name_is_refused() -> None:
    with named("ASGIServer.serve using get_almanac_contract"):
        _compat.variant(ASGIServer.serve, get_almanac_contract=None)
    copy = _compat.variant(ASGIServer.serve, HOST="127.0.0.1")
    assert copy is not ASGIServer.serve and copy.__code__ is ASGIServer.serve.__code__
    assert uagents.asgi.HOST == "0.0.0.0"


def test_a_context_with_a_given_session_sends_in_it(agent: Agent) -> None:
    import uuid

    session = uuid.uuid4()
    ctx = _compat.context_with_session(agent, session)
    assert ctx.session == session
    assert _compat.build_context(agent).session != session  # uagents' own: a fresh one


def test_the_schema_digest_is_uagents_own_and_computed_once_per_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from uagents_core.contrib.protocols.chat import ChatAcknowledgement, ChatMessage
    from uagents_core.models import Model

    expected = {m: Model.build_schema_digest(m) for m in (ChatMessage, ChatAcknowledgement)}
    first = {m: _compat.schema_digest(m) for m in expected}
    calls: list[Any] = []
    real = Model.build_schema_digest
    monkeypatch.setattr(Model, "build_schema_digest", lambda m: calls.append(m) or real(m))
    again = {m: _compat.schema_digest(m) for m in expected}
    assert first == again == expected
    assert calls == []


def test_a_context_that_overrides_send_is_sent_with_through_its_own_send() -> None:
    from uagents_core.contrib.protocols.chat import ChatAcknowledgement

    sent: list[tuple[str, Any, int]] = []

    class Recording(uagents.context.InternalContext):
        async def send(self, destination: str, message: Any, timeout: int = 30) -> Any:
            sent.append((destination, message, timeout))
            return "own"

    ctx = Recording.__new__(Recording)  # its send touches nothing of a real context
    ack = ChatAcknowledgement(acknowledged_msg_id=__import__("uuid").uuid4())
    assert asyncio.run(_compat.send_model(ctx, "agent1qdest", ack, 7)) == "own"
    assert sent == [("agent1qdest", ack, 7)]
