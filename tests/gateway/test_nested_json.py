"""A deeply nested JSON body is the client's own error on every gateway endpoint, never a 500.

5,000 nested ``[`` (or ``{"a":``) made ``json.loads`` raise ``RecursionError``: a plain-text 500
from the OpenAI, AI SDK, AG-UI and native endpoints, and from A2A (whose body a2a-sdk parses
with ``json.loads`` too). The gateway now reads every body with the project's strict reader
(:func:`agent_stream.jsontext.loads`, at most ``MAX_DEPTH`` levels), so such a body gets the
same error, in the same shape, as a body that is not JSON at all: ``400 bad_json`` in each
client's format, and for A2A a2a-sdk's own answer to a body that is not JSON (JSON-RPC -32700,
HTTP 200). Each check runs against a real gateway (uvicorn, 127.0.0.1), which answers a normal
request afterwards; a body nested 50 levels (under the cap) is answered as usual.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from inprocess_gateway import serve_gateway
from starlette.requests import Request

from agent_stream.gateway.a2a_checks import MAX_DEPTH as A2A_MAX_DEPTH
from agent_stream.gateway.middleware import HTTPError, json_value, read_body
from agent_stream.gateway.views import parse_cursor
from agent_stream.jsontext import MAX_DEPTH, dumps
from agent_stream.message import Message, event, text

ANSWER = "a plain answer"
REPLY: list[Message] = [
    event("stream_start", {"request_id": "q"}),
    text(ANSWER, message_id="M1"),
    event("stream_end", {"status": "completed"}),
]
JSON = {"content-type": "application/json"}
DEEP = {"arrays": b"[" * 5000, "objects": b'{"a":' * 5000}
NOT_JSON = b"{not json"
VALID_DEPTH = 50


def _openai(extra: Any) -> dict[str, Any]:
    return {
        "model": "llm",
        "stream": False,
        "messages": [{"role": "user", "content": "hi"}],
        "metadata": extra,
    }


def _aisdk(extra: Any) -> dict[str, Any]:
    return {
        "id": f"chat-{uuid4().hex}",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
        "agent": "llm",
        "extra": extra,
    }


def _agui(extra: Any) -> dict[str, Any]:
    return {
        "threadId": "t",
        "runId": f"run-{uuid4().hex}",
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {"agent": "llm", "extra": extra},
        "messages": [{"id": "u", "role": "user", "content": "hi"}],
    }


def _native(extra: Any) -> dict[str, Any]:
    return {"agent": "llm", "question": "hi", "extra": extra}


def _a2a(extra: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "message/send",
        "params": {
            "message": {
                "role": "user",
                "messageId": str(uuid4()),
                "kind": "message",
                "parts": [{"kind": "text", "text": "hi"}],
                "metadata": {"extra": extra},
            }
        },
    }


def _answered(kind: str, r: httpx.Response) -> None:
    """``r`` is a normal answer of the endpoint of ``kind``, holding the agent's text."""
    assert r.status_code == 200, (kind, r.status_code, r.text[:300])
    if kind == "openai":
        assert r.json()["choices"][0]["message"]["content"] == ANSWER
    elif kind == "a2a":
        result = r.json()["result"]
        assert result["status"]["state"] == "completed", result
        assert ANSWER in dumps(result)
    else:
        assert ANSWER in r.text, (kind, r.text[:300])


# kind -> (path, the body of a normal request with ``extra`` somewhere inside)
ENDPOINTS: dict[str, tuple[str, Callable[[Any], dict[str, Any]]]] = {
    "openai": ("/v1/chat/completions", _openai),
    "aisdk": ("/api/chat", _aisdk),
    "agui": ("/agui", _agui),
    "native": ("/v1/stream", _native),
    "a2a": ("/a2a/llm", _a2a),
}
CODE = {"openai": "bad_json", "aisdk": "bad_json", "agui": "bad_json", "native": "bad_json"}


def depth(value: Any) -> int:
    """How deep arrays and objects nest in ``value`` (a scalar: 0)."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def depth_of(value: Any, marker: str) -> int | None:
    """How many arrays and objects enclose the string ``marker`` in ``value`` (None: absent)."""
    if value == marker:
        return 0
    inner = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for v in inner:
        found = depth_of(v, marker)
        if found is not None:
            return found + 1
    return None


def nested(levels: int) -> Any:
    """Objects and arrays in turn, ``levels`` deep, around a string."""
    value: Any = "deep"
    for i in range(levels):
        value = {"a": value} if i % 2 else [value]
    return value


def shape(value: Any) -> Any:
    """The keys of ``value``, all the way down, with each leaf's type: what two errors of one
    format share whatever their messages say."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def message_of(kind: str, body: dict[str, Any]) -> str:
    """The human-readable message of an error body of ``kind``."""
    if kind == "aisdk":
        return str(body["errorText"])
    if kind == "agui":
        return str(body["message"])
    return str(body["error"]["message"])


def code_of(kind: str, body: dict[str, Any]) -> Any:
    """The machine-readable code of an error body of ``kind``."""
    if kind in ("aisdk", "agui"):
        return body["code"]
    return body["error"]["code"]


@pytest.mark.parametrize("kind", list(ENDPOINTS))
async def test_deeply_nested_json_is_the_clients_own_error(
    kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, make = ENDPOINTS[kind]
    caplog.set_level(logging.ERROR)
    async with (
        serve_gateway(tmp_path, ["llm"], REPLY) as (base, _),
        httpx.AsyncClient(base_url=base, timeout=30) as http,
    ):
        # what this endpoint answers a body that is plainly not JSON
        plain = await http.post(path, content=NOT_JSON, headers=JSON)
        assert plain.status_code < 500
        reference = plain.json()
        for name, raw in DEEP.items():
            r = await http.post(path, content=raw, headers=JSON)
            assert r.status_code == plain.status_code, (name, r.status_code, r.text[:200])
            if kind == "a2a":  # a2a-sdk answers a body that is not JSON with HTTP 200
                assert r.status_code == 200
            else:
                assert r.status_code == 400
            assert r.headers["content-type"].startswith("application/json"), name
            body = r.json()
            assert shape(body) == shape(reference), (name, body, reference)
            assert code_of(kind, body) == code_of(kind, reference), (name, body)
            assert code_of(kind, body) == CODE.get(kind, -32700)
            said = message_of(kind, body)
            assert "nested too deep" in said and f"over {MAX_DEPTH} levels" in said, said
            assert "Traceback" not in r.text and "RecursionError" not in r.text
            assert len(r.content) < 1024  # nothing of the body is sent back
        # the gateway is fine: a normal request is answered
        _answered(kind, await http.post(path, json=make("x")))
    errors = [rec for rec in caplog.records if rec.levelno >= logging.ERROR]
    assert errors == [], [rec.getMessage() for rec in errors]


@pytest.mark.parametrize("kind", list(ENDPOINTS))
async def test_a_body_nested_under_the_cap_is_answered(kind: str, tmp_path: Path) -> None:
    path, make = ENDPOINTS[kind]
    around = depth_of(make("<extra>"), "<extra>")  # the levels of the request around it
    assert around is not None
    valid = A2A_MAX_DEPTH if kind == "a2a" else VALID_DEPTH  # A2A's protobuf types hold less
    body = make(nested(valid - around))
    assert depth(body) == valid <= VALID_DEPTH < MAX_DEPTH
    async with (
        serve_gateway(tmp_path, ["llm"], REPLY) as (base, _),
        httpx.AsyncClient(base_url=base, timeout=30) as http,
    ):
        _answered(kind, await http.post(path, content=dumps(body).encode(), headers=JSON))


async def test_an_a2a_request_deeper_than_a_task_holds_is_invalid_params(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    around = depth_of(_a2a("<extra>"), "<extra>")
    assert around is not None
    body = _a2a(nested(A2A_MAX_DEPTH + 1 - around))
    async with (
        serve_gateway(tmp_path, ["llm"], REPLY) as (base, link),
        httpx.AsyncClient(base_url=base, timeout=30) as http,
    ):
        r = await http.post("/a2a/llm", content=dumps(body).encode(), headers=JSON)
    assert r.status_code == 200 and r.json()["id"] == 7
    assert r.json()["error"]["code"] == -32602
    assert f"over {A2A_MAX_DEPTH} levels" in r.json()["error"]["message"]
    assert link.questions == []
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR]


async def test_a2a_answers_as_a2a_sdk_does_for_a_body_that_is_not_json() -> None:
    """The status and JSON-RPC code a bare a2a-sdk app gives a body that is not JSON are
    what the gateway gives a body nested too deep (checked above: 200, -32700)."""
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface
    from starlette.applications import Starlette

    card = AgentCard(
        name="bare",
        description="a2a-sdk alone",
        supported_interfaces=[
            AgentInterface(
                url="http://127.0.0.1/", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        version="1",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )
    handler = DefaultRequestHandler(
        agent_executor=None, task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(routes=create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://sdk") as http:
        r = await http.post("/", content=NOT_JSON, headers=JSON)
    assert r.status_code == 200
    assert r.json()["error"]["code"] == -32700 and r.json().get("id") is None


def test_json_value_caps_the_depth_and_says_the_limit() -> None:
    assert json_value(dumps(nested(MAX_DEPTH)).encode()) == nested(MAX_DEPTH)
    for raw in (dumps(nested(MAX_DEPTH + 1)).encode(), *DEEP.values()):
        with pytest.raises(HTTPError) as caught:
            json_value(raw)
        assert (caught.value.status, caught.value.code) == (400, "bad_json")
        assert caught.value.message == (
            f"the request body is not JSON: nested too deep (over {MAX_DEPTH} levels)"
        )
    with pytest.raises(HTTPError) as caught:
        json_value(NOT_JSON)
    assert caught.value.message.startswith("the request body is not JSON: Expecting property")


def test_a_cursor_int_cannot_parse_is_not_a_cursor() -> None:
    assert parse_cursor("r1:" + "9" * 18) == ("r1", 10**18 - 1)
    for bad in ("r1:" + "9" * 5000, "r1:" + "9" * 19, "r1:²", "r1:١٢"):
        assert parse_cursor(bad) is None, bad[:20]


async def test_a_huge_last_event_id_is_no_500(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["llm"], REPLY) as (base, _),
        httpx.AsyncClient(base_url=base, timeout=30) as http,
    ):
        for cursor in ("r1:" + "9" * 5000, "r1:²"):
            r = await http.get("/v1/stream", params={"q": "hi", "last_event_id": cursor})
            assert r.status_code == 200 and ANSWER in r.text  # not a cursor: a question
            r = await http.post(
                "/v1/chat/completions",
                json=_openai("x"),
                headers={"last-event-id": cursor[:40].encode("latin-1")},
            )
            _answered("openai", r)


@pytest.mark.parametrize(
    ("declared", "over"),
    [("9" * 5000, True), ("0" * 5000 + "1", False), ("²", False), ("10", False), ("11", True)],
)
async def test_a_content_length_int_cannot_parse_is_no_500(declared: str, over: bool) -> None:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": b"[1]", "more_body": False}

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/stream",
        "headers": [(b"content-length", declared.encode("latin-1"))],
    }
    request = Request(scope, receive)
    if over:
        with pytest.raises(HTTPError) as caught:
            await read_body(request, 10)
        assert (caught.value.status, caught.value.code) == (413, "body_too_large")
    else:
        assert await read_body(request, 10) == b"[1]"
