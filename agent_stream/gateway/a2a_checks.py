"""What the A2A endpoint refuses before a2a-sdk sees a request, as JSON-RPC errors.

Both versions' methods are checked: A2A 1.0 (``SendMessage``, ``SendStreamingMessage``, ...; a
part is ``{"text": ...}``, ``{"data": ...}``, ``{"url": ...}`` or ``{"raw": ...}``) and 0.3
(``message/send``, ``message/stream``, ...; a part names its ``kind``).
:func:`check_message`: a message an agent that takes text cannot take (no parts, no text, parts
of another kind, a ``taskId`` or ``contextId`` that is not a non-empty string): -32602 naming
what was wrong. :func:`check_request`: a body a2a-sdk would refuse as malformed (not JSON
-32700, not JSON-RPC -32600, params of the wrong shape -32602), answered here with the same code
because the SDK logs each one as an error with its traceback, and a client's mistake is not one.
The messages say where and what, never the value sent.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.responses import JSONResponse, Response

__all__ = [
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_DEPTH",
    "PARSE_ERROR",
    "SENDS",
    "check_message",
    "check_request",
    "rpc_error",
    "starts_task",
]

# The deepest a request's JSON may nest: a2a-sdk holds it in protobuf messages (each JSON level
# of a Struct is two of them), which fail past 100 levels once a task carries the message.
MAX_DEPTH = 32
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SENDS_03 = ("message/send", "message/stream")
SENDS_10 = ("SendMessage", "SendStreamingMessage")
SENDS = SENDS_03 + SENDS_10
_CONTENT_10 = {"text": "text", "data": "data", "url": "file", "raw": "file"}


def _message(body: Any) -> Any:
    """The message of a send request (None: not one, or no message object)."""
    if not isinstance(body, dict) or body.get("method") not in SENDS:
        return None
    params = body.get("params")
    return params.get("message") if isinstance(params, dict) else None


def starts_task(body: Any) -> bool:
    """Whether ``body`` is a send whose message starts a new task (it names no ``taskId``).

    Args:
        body: the JSON-RPC request, parsed.
    """
    message = _message(body)
    return isinstance(message, dict) and not message.get("taskId")


def _kind(part: Any, v03: bool) -> str | None:
    """A part's kind (text, data, file) as either version writes it; None: unreadable."""
    if not isinstance(part, dict):
        return None
    if v03:
        kind = part.get("kind")
        return kind if isinstance(kind, str) else None
    found = [_CONTENT_10[k] for k in _CONTENT_10 if k in part]
    return found[0] if len(found) == 1 else None


def check_message(body: Any) -> tuple[str, list[str]] | None:
    """What is wrong with a send request's parts for an agent that takes text, or with the
    task and context it names: (reason, the refused parts), or None when it is fine, or when it
    is not such a request or too malformed to tell (a2a-sdk's own validation answers it).

    Args:
        body: the JSON-RPC request, parsed.
    """
    message = _message(body)
    if not isinstance(message, dict):
        return None
    v03 = body["method"] in SENDS_03
    for field in ("taskId", "contextId"):
        value = message.get(field)
        if value is not None and not isinstance(value, str):
            return f"{field} must be a string, not {type(value).__name__}", []
        if isinstance(value, str) and not value.strip():
            return f"{field} is empty: leave it out to start a new one", []
    parts = message.get("parts")
    if not isinstance(parts, list):
        return None
    if not parts:
        shape = '{"kind": "text", "text": "..."}' if v03 else '{"text": "..."}'
        return f"the message has no parts: send the question as a text part ({shape})", []
    kinds = [_kind(p, v03) for p in parts]
    if not all(isinstance(k, str) for k in kinds):
        return None
    refused = [f"parts[{i}] ({k})" for i, k in enumerate(kinds) if k != "text"]
    if refused:
        return (
            f"this agent takes text parts only (input mode text/plain); refused: "
            f"{', '.join(refused)}",
            refused,
        )
    if not any(isinstance(p.get("text"), str) and p["text"].strip() for p in parts):
        return "the message's text is empty: there is no question to ask", []
    return None


def check_request(body: Any) -> tuple[int, str] | None:
    """The JSON-RPC error a2a-sdk would answer ``body`` with because it is not a well-formed
    request of a method it knows, as (code, message); None when it is one (or names a method
    the SDK does not know: it answers that quietly itself).

    The SDK logs such a request as an error, with its traceback; a client's mistake is not one.

    Args:
        body: the request body, parsed (None: it is not JSON).
    """
    from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
    from a2a.compat.v0_3.types import JSONRPCRequest
    from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
    from google.protobuf.json_format import ParseDict, ParseError
    from pydantic import ValidationError

    if body is None:
        return PARSE_ERROR, "Parse error: the request body is not JSON"
    try:
        JSONRPCRequest.model_validate(body)
    except ValidationError as exc:
        return INVALID_REQUEST, f"Invalid request: not a JSON-RPC 2.0 request ({_said(exc)})"
    if isinstance(body.get("id"), bool):
        return INVALID_REQUEST, "Invalid request: id must be a string, an integer or null"
    method = body["method"]
    old: Any = JSONRPC03Adapter.METHOD_TO_MODEL.get(method)
    if old is not None:
        try:
            old.model_validate(body)
        except ValidationError as exc:
            return INVALID_PARAMS, f"Invalid params: {_said(exc)}"
        return None
    new = JsonRpcDispatcher.METHOD_TO_MODEL.get(method)
    if new is None:
        return None
    params = body.get("params", {})
    if not isinstance(params, dict):
        return INVALID_PARAMS, "Invalid params: params must be an object"
    status = params.get("status")
    if method == "ListTasks" and status is not None and status not in _states():
        return INVALID_PARAMS, "Invalid params: status is not a task state (TASK_STATE_...)"
    try:
        ParseDict(params, new(), ignore_unknown_fields=True)
    except (ParseError, ValueError, TypeError) as exc:
        return INVALID_PARAMS, f"Invalid params: {_parse_said(str(exc))}"
    return None


def _states() -> frozenset[str]:
    """The task states a client may name (``TASK_STATE_WORKING``, ...)."""
    from a2a.types import TaskState

    names: list[str] = TaskState.keys()  # a protobuf enum, not a dict
    return frozenset(n for n in names if n != "TASK_STATE_UNSPECIFIED")


def _parse_said(said: str, most: int = 200) -> str:
    """A protobuf parse error: where and what, the value sent cut out."""
    said = re.sub(r" which is .*? at ", " at ", said)
    said = re.sub(r"Invalid enum value \S+", "invalid enum value", said)
    return said if len(said) <= most else said[:most] + "..."


def _said(exc: Any, most: int = 3) -> str:
    """A validation error's first complaints: where and what, never the value sent."""
    said = []
    for err in exc.errors()[:most]:
        where = ".".join(str(x) for x in err.get("loc", ()) if not str(x)[:1].isupper())
        said.append(f"{where or 'the request'}: {err.get('msg', 'invalid')}")
    more = exc.error_count() - len(said)
    return "; ".join(said) + (f" (and {more} more)" if more > 0 else "")


def rpc_error(body: Any, code: int, message: str, data: Any = None) -> Response:
    """A JSON-RPC error response to ``body`` (its id, when it has a usable one).

    Args:
        body: the request, parsed (anything).
        code: the JSON-RPC error code.
        message: what the client is told.
        data: the error's data (None or empty: none).
    """
    rid = body.get("id") if isinstance(body, dict) else None
    error: dict[str, Any] = {"code": code, "message": message}
    if data:
        error["data"] = data
    return JSONResponse(
        {"jsonrpc": "2.0", "id": rid if isinstance(rid, (str, int)) else None, "error": error}
    )
