"""What a hostile peer sends: malformed payloads for the chat protocol's models, and envelopes
built by hand (signed with a real identity, or unsigned from a ``user...`` address).

``FORMS``: (name, schema digest, payload). The first nine are the forms issue 9 found to silence
an agent; the rest are more of the same kind. ``HTTP_FORMS`` break the envelope itself.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import urllib.error
import urllib.request
import uuid
from typing import Any

from uagents_core.contrib.protocols.chat import ChatAcknowledgement, ChatMessage, TextContent
from uagents_core.envelope import Envelope
from uagents_core.identity import Identity, generate_user_address
from uagents_core.models import Model

CHAT = Model.build_schema_digest(ChatMessage)
ACK = Model.build_schema_digest(ChatAcknowledgement)
TS = "2026-01-01T00:00:00+00:00"
U4 = str(uuid.uuid4())


def _chat(**fields: Any) -> str:
    base: dict[str, Any] = {
        "timestamp": TS,
        "msg_id": str(uuid.uuid4()),
        "content": [{"type": "text", "text": "hi"}],
    }
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...})


def _nested(depth: int) -> str:
    return '{"content": ' + "[" * depth + "]" * depth + "}"


FORMS: list[tuple[str, str, str]] = [
    # issue 9's nine
    ("extra top-level key", CHAT, _chat(evil=1)),
    ("content not a list", CHAT, _chat(content={"type": "text", "text": "hi"})),
    ("unknown content type", CHAT, _chat(content=[{"type": "evil", "text": "hi"}])),
    (
        "content item with an extra key",
        CHAT,
        _chat(content=[{"type": "text", "text": "hi", "evil": 1}]),
    ),
    ("content item missing a field", CHAT, _chat(content=[{"type": "text"}])),
    ("missing content", CHAT, _chat(content=...)),
    ("msg_id not a UUID", CHAT, _chat(msg_id="not-a-uuid")),
    ("payload not JSON", CHAT, "{this is not json"),
    ("payload a JSON array", CHAT, "[1, 2, 3]"),
    # more of our own
    ("huge msg_id", CHAT, _chat(msg_id="7" * 1_000_000)),
    ("nested garbage", CHAT, _nested(50_000)),
    (
        "valid JSON of another model",
        CHAT,
        json.dumps({"acknowledged_msg_id": U4, "metadata": None}),
    ),
    ("wrong digest with a valid body", ACK, _chat()),
    ("msg_id a version-1 UUID", CHAT, _chat(msg_id=str(uuid.uuid1()))),
    ("timestamp garbage", CHAT, _chat(timestamp={"year": "soon"})),
    ("text not a string", CHAT, _chat(content=[{"type": "text", "text": {"a": [1]}}])),
    ("payload JSON null", CHAT, "null"),
    ("empty payload", CHAT, ""),
    ("lone surrogate in text", CHAT, _chat(content=[{"type": "text", "text": "\ud800"}], evil=1)),
    ("metadata value null", CHAT, _chat(content=[{"type": "metadata", "metadata": {"k": None}}])),
    ("ten thousand garbage items", CHAT, _chat(content=[{"type": "x"}] * 10_000)),
    (
        "stream_id not a UUID4",
        CHAT,
        _chat(content=[{"type": "start-stream", "stream_id": "0" * 32}]),
    ),
    ("acknowledgement missing its id", ACK, json.dumps({"metadata": {"a": "b"}})),
    (
        "acknowledgement with an extra key",
        ACK,
        json.dumps({"acknowledged_msg_id": U4, "evil": True}),
    ),
    ("NaN and a huge number", CHAT, '{"msg_id": NaN, "timestamp": 1e999999, "content": []}'),
    ("unknown schema digest", "model:" + "0" * 64, _chat()),
]


def valid_question(text: str = "hello") -> str:
    """A well-formed ChatMessage payload asking ``text``."""
    return ChatMessage(content=[TextContent(text=text)]).json()


def envelope(
    target: str,
    digest: str,
    payload: str | None,
    *,
    identity: Identity | None = None,
    raw_payload: str | None = None,
    tamper: bool = False,
) -> bytes:
    """An envelope's JSON: signed by ``identity``, else unsigned from a fresh user address.

    ``raw_payload``: put this in the payload field as it is (e.g. not base64). ``tamper``:
    change the payload after signing (the signature no longer matches)."""
    sender = identity.address if identity is not None else generate_user_address()
    env = Envelope(
        version=1, sender=sender, target=target, session=uuid.uuid4(), schema_digest=digest
    )
    if payload is not None:
        env.encode_payload(payload)
    if raw_payload is not None:
        env.payload = raw_payload
    if identity is not None:
        env.sign(identity)
    if tamper:
        env.encode_payload(valid_question("tampered"))
    return env.model_dump_json().encode()


HTTP_FORMS: list[tuple[str, dict[str, Any]]] = [
    ("payload not base64", {"raw_payload": "***not base64***"}),
    ("payload not UTF-8", {"raw_payload": base64.b64encode(b"\xff\xfe\xfa{").decode()}),
    ("payload changed after signing", {"tamper": True}),
]


def post(endpoint: str, body: bytes, timeout: float = 10.0) -> int:
    """POST ``body`` as JSON; the HTTP status (0 when the connection failed)."""
    req = urllib.request.Request(
        endpoint, data=body, method="POST", headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


class Hanging:
    """An endpoint that accepts connections, reads nothing and never answers (a peer that hangs);
    ``held`` are the connections it took."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1024)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/submit"
        self.held: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        """Stop accepting and drop every held connection."""
        self.closed = True
        self.sock.close()
        for c in self.held:
            c.close()
