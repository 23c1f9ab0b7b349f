"""Every use of a uagents private name, in one place, checked against the installed uagents.

The protection of :mod:`agent_stream.uagents._protection` and the offline agents of
:mod:`agent_stream.uagents.local._agents` need a few things uagents does not make public: an agent's
registered models (to validate a payload before it is queued, and to have uagents' own parse
take the model the guard built), its inbox queue (to cap it), its dispenser (to send through
per-peer lanes), its HTTP server object (to cap envelopes at the edge), its event loop, the
store behind ``ctx.storage`` (a fleet replica's own), and the
spots where uagents looks up the ledger query, the status update and the listening host (and
the uvicorn settings its server runs with). Read anywhere else with a ``getattr(..., None)``
fallback, a rename in a later uagents would change behaviour silently -- a renamed models table
would make the guard refuse every payload, a renamed inbox would turn the cap off. Here each
internal is listed in :data:`INTERNALS`, and :func:`check` (run by ``protect()`` and when a
protected agent starts) raises :class:`UagentsCompatError` naming the missing or changed
internal and the uagents version, before anything runs on it.

Nothing here changes a uagents class or module: the "variants" (:func:`variant`) are copies of
uagents functions whose global lookups of a name or two resolve differently, used only by our
own subclasses.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.metadata
import inspect
import types
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import uagents
import uagents.agent as _ua_agent
import uagents.asgi as _ua_asgi
import uagents.context as _ua_context
import uvicorn
from pydantic import ValidationError
from uagents.asgi import ASGIServer
from uagents.communication import Dispenser
from uagents.dispatch import dispatcher
from uagents.resolver import Resolver
from uagents.storage import KeyValueStore
from uagents_core.envelope import Envelope
from uagents_core.identity import Identity, is_user_address
from uagents_core.models import Model

from agent_stream._header_timeout import protocol_class
from agent_stream.uagents._chat_json import chat_json

__all__ = [
    "INTERNALS",
    "UagentsCompatError",
    "agent_init_without_ledger",
    "agent_loop",
    "build_context",
    "check",
    "check_agent",
    "context_with_session",
    "dispenser_of",
    "identity_of",
    "inbox_of",
    "models_of",
    "port_of",
    "queued_payloads",
    "resolver_of",
    "send_model",
    "serve_on",
    "serve_with_envelope",
    "server_of",
    "set_dispenser",
    "set_identity",
    "set_model",
    "set_storage",
    "sinks_for",
    "started",
    "submit_envelope",
    "submits_directly",
    "uagents_version",
    "variant",
]


class UagentsCompatError(RuntimeError):
    """The installed uagents lacks (or changed) an internal that agent_stream relies on."""


def uagents_version() -> str:
    """The installed uagents version (its distribution's, else the module's)."""
    try:
        return importlib.metadata.version("uagents")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source checkout
        return str(getattr(uagents, "__version__", "unknown"))


def _fail(name: str, what: str) -> UagentsCompatError:
    return UagentsCompatError(
        f"uagents {uagents_version()}: {name} {what}; agent_stream needs it to protect agents "
        "(tested with uagents >=0.26,<0.27)"
    )


def _looks_up(func: Any, name: str) -> bool:
    code = getattr(func, "__code__", None)
    return isinstance(code, types.CodeType) and name in code.co_names


# -- the class-level internals ---------------------------------------------------------------------
def _own(cls: type, name: str) -> Any:
    """``cls``'s own ``name`` (not one inherited from a base such as uagents' ``Sink``)."""
    return vars(cls).get(name)


def _class_checks() -> list[tuple[str, Callable[[], bool], str]]:
    agent_cls = _ua_agent.Agent
    return [
        (
            "Agent._build_context",
            lambda: callable(_own(agent_cls, "_build_context")),
            "is missing or not a method",
        ),
        (
            "Agent._update_agent_status",
            lambda: inspect.iscoroutinefunction(_own(agent_cls, "_update_agent_status")),
            "is missing or not a coroutine method",
        ),
        (
            "Agent._process_message_queue",
            lambda: inspect.iscoroutinefunction(_own(agent_cls, "_process_message_queue")),
            "is missing or not a coroutine method",
        ),
        (
            "Agent.handle_message",
            lambda: (
                inspect.iscoroutinefunction(_own(agent_cls, "handle_message"))
                and _looks_up(_own(agent_cls, "handle_message"), "_message_queue")
            ),
            "is missing or no longer queues into _message_queue",
        ),
        (
            "Agent.__init__ calling get_almanac_contract",
            lambda: (
                _looks_up(agent_cls.__init__, "get_almanac_contract")
                and callable(getattr(_ua_agent, "get_almanac_contract", None))
            ),
            "is no longer how an Agent finds its ledger contract",
        ),
        (
            "ASGIServer.serve using HOST",
            lambda: (
                _looks_up(ASGIServer.serve, "HOST")
                and _looks_up(ASGIServer.serve, "uvicorn")
                and isinstance(getattr(_ua_asgi, "HOST", None), str)
            ),
            "is no longer how the agent's server chooses its host",
        ),
        (
            "ASGIServer.__call__",
            lambda: inspect.iscoroutinefunction(_own(ASGIServer, "__call__")),
            "is missing or not a coroutine method",
        ),
        (
            "Dispenser.run / add_envelope",
            lambda: (
                inspect.iscoroutinefunction(_own(Dispenser, "run"))
                and callable(_own(Dispenser, "add_envelope"))
            ),
            "is missing or changed",
        ),
        (
            "dispatcher.sinks",
            lambda: isinstance(getattr(dispatcher, "sinks", None), dict),
            "is missing or not a dict",
        ),
        (
            "Agent._build_context passing _identity",
            lambda: _looks_up(_own(agent_cls, "_build_context"), "_identity"),
            "no longer gives contexts the agent's _identity",
        ),
        (
            "Envelope.sign using sign_digest",
            lambda: _looks_up(Envelope.sign, "sign_digest"),
            "no longer signs with the identity's sign_digest",
        ),
        (
            "InternalContext._session",
            lambda: (
                _looks_up(_ua_context.InternalContext.__init__, "_session")
                and isinstance(_own(_ua_context.InternalContext, "session"), property)
                and _looks_up(_own(_ua_context.InternalContext, "session").fget, "_session")
            ),
            "is no longer where a context keeps its envelope session",
        ),
        (
            "ASGIServer.__call__ using Envelope",
            lambda: _looks_up(_own(ASGIServer, "__call__"), "Envelope"),
            "no longer parses envelopes with uagents_core's Envelope",
        ),
        (
            "ASGIServer.__call__ dispatching with dispatcher",
            lambda: (
                all(
                    _looks_up(_own(ASGIServer, "__call__"), n)
                    for n in ("dispatcher", "is_user_address", "_get_rest_handler_details")
                )
                and callable(getattr(dispatcher, "contains", None))
                and inspect.iscoroutinefunction(getattr(dispatcher, "dispatch_msg", None))
                and callable(_own(ASGIServer, "_get_rest_handler_details"))
            ),
            "no longer verifies and dispatches an envelope the way submit_envelope does",
        ),
        (
            "Agent._process_single_message parsing with _models",
            lambda: (
                _looks_up(_own(agent_cls, "_process_single_message"), "_models")
                and _looks_up(_own(agent_cls, "_process_single_message"), "parse_raw")
            ),
            "no longer parses payloads with its models table's parse_raw",
        ),
        (
            "Context.send building the digest then calling send_raw",
            lambda: (
                _looks_up(_own(_ua_context.ExternalContext, "send"), "_protocol")
                and _looks_up(_own(_ua_context.ExternalContext, "send"), "_queries")
                and _looks_up(_own(_ua_context.ExternalContext, "send"), "send_raw")
                and _looks_up(
                    _own(_ua_context.InternalContext, "send"), "_is_valid_interval_message"
                )
                and _looks_up(_own(_ua_context.InternalContext, "send"), "send_raw")
                and {"protocol_digest", "queries"}
                <= set(inspect.signature(_ua_context.InternalContext.send_raw).parameters)
            ),
            "no longer sends through send_raw with the context's protocol and queries",
        ),
    ]


#: What agent_stream reads or overrides, by name (class-level and per-agent).
INTERNALS: tuple[str, ...] = (
    "Agent._build_context",
    "Agent._update_agent_status",
    "Agent._process_message_queue",
    "Agent.handle_message",
    "Agent.__init__ calling get_almanac_contract",
    "ASGIServer.serve using HOST",
    "ASGIServer.__call__",
    "Dispenser.run / add_envelope",
    "dispatcher.sinks",
    "Agent._build_context passing _identity",
    "Envelope.sign using sign_digest",
    "ASGIServer.__call__ using Envelope",
    "ASGIServer.__call__ dispatching with dispatcher",
    "Agent._process_single_message parsing with _models",
    "InternalContext._session",
    "Context.send building the digest then calling send_raw",
    "Agent._identity",
    "Agent._resolver",
    "Agent._models",
    "Agent._message_queue",
    "asyncio.Queue._queue",
    "Agent._dispenser",
    "Agent._dispenser_task",
    "Agent._server",
    "Agent._loop",
    "Agent._port",
    "Agent._storage",
)


def check() -> None:
    """Raise :class:`UagentsCompatError` unless every class-level internal is as expected."""
    for name, ok, what in _class_checks():
        if not ok():
            raise _fail(name, what)


def check_agent(agent: Any) -> None:
    """:func:`check`, then the per-agent internals of ``agent`` (set by ``Agent.__init__``)."""
    check()
    state = getattr(agent, "__dict__", {})
    expect: list[tuple[str, str, Any]] = [
        ("Agent._models", "_models", dict),
        ("Agent._message_queue", "_message_queue", asyncio.Queue),
        ("Agent._dispenser", "_dispenser", Dispenser),
        ("Agent._server", "_server", ASGIServer),
        ("Agent._loop", "_loop", asyncio.AbstractEventLoop),
        ("Agent._port", "_port", int),
        ("Agent._identity", "_identity", Identity),
        ("Agent._resolver", "_resolver", Resolver),
        ("Agent._storage", "_storage", KeyValueStore),
    ]
    for name, attr, kind in expect:
        if not isinstance(state.get(attr), kind):
            raise _fail(name, f"is missing or not a {kind.__name__}")
    if "_dispenser_task" not in state:
        raise _fail("Agent._dispenser_task", "is missing")
    queue = state["_message_queue"]
    if not isinstance(getattr(queue, "_queue", None), Iterable):
        raise _fail("asyncio.Queue._queue", "is missing")


# -- per-agent accessors (valid once check_agent passed) ------------------------------------------
def models_of(agent: Any) -> dict[str, type[Model]]:
    """The agent's ``{schema_digest: model}`` table (every protocol it includes)."""
    models: dict[str, type[Model]] = agent._models
    return models


def set_model(agent: Any, schema_digest: str, model: type[Model]) -> None:
    """Make ``model`` what ``agent`` parses payloads of ``schema_digest`` with (its own models
    table; a subclass of the model registered for it, so handlers see what they expect)."""
    models = models_of(agent)
    current = models.get(schema_digest)
    if current is None or not issubclass(model, current):
        raise ValueError(f"{model!r} does not stand for the model of {schema_digest}")
    models[schema_digest] = model


def inbox_of(agent: Any) -> asyncio.Queue[Any]:
    """The agent's inbox: ``(schema_digest, sender, payload, session)`` waiting to be handled."""
    queue: asyncio.Queue[Any] = agent._message_queue
    return queue


def queued_payloads(queue: asyncio.Queue[Any]) -> Iterable[Any]:
    """The items waiting in ``queue``, oldest first, without taking them."""
    items: Iterable[Any] = queue._queue  # type: ignore[attr-defined]
    return items


def dispenser_of(agent: Any) -> Dispenser:
    """The dispenser the agent's contexts send through."""
    d: Dispenser = agent._dispenser
    return d


def set_dispenser(agent: Any, dispenser: Dispenser) -> None:
    """Make ``dispenser`` the one contexts built from now on send through (and the one
    ``start_message_dispenser`` runs, if the agent has not started)."""
    agent._dispenser = dispenser


def started(agent: Any) -> bool:
    """Whether the agent's dispenser task was started (the agent runs or ran)."""
    return agent._dispenser_task is not None


def server_of(agent: Any) -> ASGIServer:
    """The agent's HTTP server object (the ASGI app uvicorn serves once the agent runs)."""
    server: ASGIServer = agent._server
    return server


def agent_loop(agent: Any) -> asyncio.AbstractEventLoop:
    """The event loop the agent was built with (uagents' own ``Agent.run`` uses it)."""
    loop: asyncio.AbstractEventLoop = agent._loop
    return loop


def port_of(agent: Any) -> int:
    """The port the agent's HTTP server listens on (uagents' default 8000 when none given)."""
    port: int = agent._port
    return port


def identity_of(agent: Any) -> Identity:
    """The identity the agent signs with (its contexts are given it when built)."""
    identity: Identity = agent._identity
    return identity


def resolver_of(agent: Any) -> Resolver:
    """The resolver the agent's contexts find peers' endpoints with."""
    resolver: Resolver = agent._resolver
    return resolver


def set_identity(agent: Any, identity: Identity) -> None:
    """Make ``identity`` (same key and address) the one the agent signs with from now on."""
    agent._identity = identity


def set_storage(agent: Any, store: KeyValueStore) -> None:
    """Make ``store`` the ``ctx.storage`` of the contexts ``agent`` builds from now on (uagents
    hands every context the agent's own store, named after its address)."""
    if not isinstance(getattr(agent, "__dict__", {}).get("_storage"), KeyValueStore):
        raise _fail("Agent._storage", "is missing or not a KeyValueStore")
    agent._storage = store


def build_context(agent: Any) -> Any:
    """A fresh context of ``agent``, as uagents builds one for a handler."""
    return agent._build_context()


def context_with_session(agent: Any, session: uuid.UUID) -> Any:
    """A fresh context of ``agent`` whose messages go in envelope session ``session`` (uagents
    gives each context a new random one): a conversation continued from another process."""
    ctx = agent._build_context()
    ctx._session = session
    return ctx


_DIGESTS: dict[type, str] = {}
_MAX_DIGESTS = 256  # model classes remembered; more (classes made at run time) are not cached


def schema_digest(model: type[Model]) -> str:
    """``model``'s schema digest, computed once per class (uagents rebuilds it on every send)."""
    digest = _DIGESTS.get(model)
    if digest is None:
        digest = Model.build_schema_digest(model)
        if len(_DIGESTS) < _MAX_DIGESTS:
            _DIGESTS[model] = digest
    return digest


async def send_model(ctx: Any, destination: str, message: Model, timeout: int) -> Any:
    """``ctx.send(destination, message, timeout=timeout)``, with the schema digest cached and
    a chat model's JSON written directly (:func:`~agent_stream.uagents._chat_json.chat_json`).

    For uagents' own two contexts this does what their ``send`` does, in the same order (the
    interval-message check of an internal context; the protocol digest and pending queries of a
    handler's context), then ``send_raw``. Any other context (a subclass overriding ``send``, a
    caller's own) is sent with through its ``send``.
    """
    send = getattr(type(ctx), "send", None)
    if send is _ua_context.ExternalContext.send:
        return await ctx.send_raw(
            destination=destination,
            message_schema_digest=schema_digest(type(message)),
            message_body=chat_json(message),
            timeout=timeout,
            protocol_digest=ctx._protocol[0],
            queries=ctx._queries,
        )
    if send is _ua_context.InternalContext.send:
        digest = schema_digest(type(message))
        if ctx._is_valid_interval_message(digest):
            return await ctx.send_raw(
                destination=destination,
                message_schema_digest=digest,
                message_body=chat_json(message),
                timeout=timeout,
            )
    return await ctx.send(destination, message, timeout=timeout)


def sinks_for(address: str) -> list[Any]:
    """What uagents' in-process dispatcher delivers ``address``'s messages to (agents)."""
    return list(dispatcher.sinks.get(address, ()))


# -- variants of uagents functions -----------------------------------------------------------------
def variant(func: Any, label: str | None = None, /, **names: Any) -> Any:
    """A copy of ``func`` whose global lookups of ``names`` give the values given.

    The copy has its own globals (a snapshot of ``func``'s module with ``names`` replaced):
    uagents' module and ``func`` itself are unchanged. UagentsCompatError when ``func`` does not
    look up one of ``names`` (replacing it would silently do nothing).
    """
    for name in names:
        if not _looks_up(func, name):
            what = label or getattr(func, "__qualname__", repr(func))
            raise _fail(f"{what} using {name}", "changed")
    scope = dict(func.__globals__)
    scope.update(names)
    copy = types.FunctionType(
        func.__code__, scope, func.__name__, func.__defaults__, func.__closure__
    )
    copy.__kwdefaults__ = func.__kwdefaults__
    copy.__qualname__ = func.__qualname__
    copy.__doc__ = func.__doc__
    return copy


def _no_contract(*_args: Any, **_kwargs: Any) -> None:
    return None


@functools.lru_cache(maxsize=1)
def agent_init_without_ledger() -> Any:
    """``Agent.__init__`` that does not query the ledger for the Almanac contract.

    uagents' ``Agent.__init__`` calls ``get_almanac_contract(network)``: a blocking ledger query
    (it waits for the network on a machine with none). The copy gets None, which uagents itself
    uses when the contract version does not match ("contract interactions disabled").
    """
    return variant(_ua_agent.Agent.__init__, "Agent.__init__", get_almanac_contract=_no_contract)


#: Seconds an idle kept-alive connection stays open on a server run by :func:`serve_on`
#: (uvicorn's default is 5): longer than any client pool keeps one (agent_stream's: 4 s), so the
#: client closes first. When the server closes first, it is the server that keeps the
#: connection's TIME_WAIT, and on loopback a client's next connection from the same port lands
#: on it and is refused (ECONNREFUSED, though the server listens): seen by the hundred under a
#: thousand replies, when a busy client's pool is late closing its idle connections.
SERVER_KEEP_ALIVE = 30


def _kept_alive_config(http: type[asyncio.Protocol]) -> Callable[..., uvicorn.Config]:
    """``uvicorn.Config`` with idle connections kept :data:`SERVER_KEEP_ALIVE` seconds and
    ``http`` as its HTTP protocol (unless the caller says otherwise)."""

    def config(*args: Any, **kwargs: Any) -> uvicorn.Config:
        kwargs.setdefault("timeout_keep_alive", SERVER_KEEP_ALIVE)
        kwargs.setdefault("http", http)
        return uvicorn.Config(*args, **kwargs)

    return config


def _serve_variant(host: str | None, http: type[asyncio.Protocol]) -> Any:
    """``ASGIServer.serve`` listening on ``host`` (None: uagents' own) with ``http``: one per
    server run, as the protocol class counts its server's connections."""
    names: dict[str, Any] = {
        "uvicorn": types.SimpleNamespace(Config=_kept_alive_config(http), Server=uvicorn.Server)
    }
    if host is not None:
        names["HOST"] = host
    return variant(ASGIServer.serve, "ASGIServer.serve", **names)


async def serve_on(
    server: ASGIServer,
    host: str | None,
    *,
    header_timeout: float = 5.0,
    max_header_connections: int = 256,
) -> None:
    """Run uagents' ``ASGIServer.serve`` for ``server``, listening on ``host`` (None: where
    uagents listens), idle connections kept :data:`SERVER_KEEP_ALIVE` seconds, slow clients
    cut off (:mod:`agent_stream._header_timeout`): request headers must arrive within
    ``header_timeout`` seconds, at most ``max_header_connections`` connections send them at
    once."""
    http = protocol_class(header_timeout, max_header_connections)
    await _serve_variant(host, http)(server)


@functools.lru_cache(maxsize=4)
def _call_variant(envelope: type) -> Any:
    return variant(ASGIServer.__call__, "ASGIServer.__call__", Envelope=envelope)


async def serve_with_envelope(
    server: ASGIServer, envelope: type, scope: Any, receive: Any, send: Any
) -> None:
    """Run uagents' ``ASGIServer.__call__`` for ``server``, parsing (and so verifying)
    incoming envelopes as ``envelope``, a subclass of uagents_core's ``Envelope``."""
    await _call_variant(envelope)(server, scope, receive, send)


def submits_directly(server: ASGIServer, headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether :func:`submit_envelope` handles an envelope posted to ``server``'s ``/submit``
    with ``headers`` as ``ASGIServer.__call__`` would: a JSON content type, and no REST handler
    of ``POST /submit`` (uagents would hand the body to it)."""
    types_ = [v for k, v in headers if k.lower() == b"content-type"]
    if not types_ or b"application/json" not in types_[-1]:
        return False  # uagents answers these itself (missing or wrong content type)
    return not server._get_rest_handler_details(method="POST", endpoint="/submit")


async def submit_envelope(
    server: ASGIServer, envelope: type[Envelope], contents: Any
) -> tuple[int, str]:
    """What ``ASGIServer.__call__`` does with one envelope posted to ``/submit`` (JSON, not a
    query, :func:`submits_directly` true) whose body parses to ``contents``, without the ASGI
    round trip and a JSON encode and decode of the envelope: parsed (and so verified) as
    ``envelope``, routed, dispatched. ``(200, "")`` or (the status, the error it answers).

    Args:
        server: the agent's server.
        envelope: uagents_core's ``Envelope`` or a subclass (its ``verify``).
        contents: the envelope's JSON object.
    """
    try:
        env = envelope.model_validate(contents)
    except ValidationError:
        return 400, "contents do not match envelope schema"
    if not is_user_address(env.sender):  # verify signature if sent from agent
        try:
            env.verify()
        except Exception as err:
            server._logger.warning(f"Failed to verify envelope: {err}")
            return 400, str(err)
    if not dispatcher.contains(address=env.target):
        return 400, "unable to route envelope"
    await dispatcher.dispatch_msg(
        sender=env.sender,
        destination=env.target,
        schema_digest=env.schema_digest,
        message=env.decode_payload(),
        session=env.session,
    )
    return 200, ""
