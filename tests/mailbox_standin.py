"""A local stand-in of the Agentverse mailbox endpoints uagents 0.26.1's mailbox client calls, on
127.0.0.1 (Starlette on uvicorn, in a thread of its own):

- ``POST /v2/agents/mailbox/submit``: a signed envelope for a mailbox agent (what a peer posts
  to the endpoint such an agent registers, ``AgentverseConfig.mailbox_endpoint``); its signature
  is checked, it is stored for its target;
- ``GET /v2/agents/{address}/mailbox``: what is stored for ``address``, as uagents'
  ``StoredEnvelope`` items (uuid, envelope, received_at, expires_at), oldest first;
- ``DELETE /v2/agents/{address}/mailbox/{uuid}``: the agent acknowledges one it handled;
- the connection the agent inspector makes (uagents' ``register_in_agentverse``, run by the
  agent's ``POST /connect``): ``GET /v2/identity/{address}/challenge``, ``POST /v2/identity``
  (the challenge signed by the agent's key) and ``POST /v2/agents`` (its registration). An
  agent's mailbox exists once it proved its identity this way (before: 404, as Agentverse
  answers "Agent mailbox not found", and a submit for it is refused).

The two reads need ``Authorization: Agent <attestation>`` (uagents-core's ``compute_attestation``:
the agent's public key, a validity window and a nonce, signed by the agent), checked here against
the address in the path. Everything is recorded: :attr:`posts` (time, bytes, target, payload) and
:attr:`polls` (time, address, how many envelopes it held). Bounded: bodies over 2 MiB are refused,
at most 10,000 envelopes are held.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from uagents_core.config import DEFAULT_MAILBOX_PATH
from uagents_core.envelope import Envelope
from uagents_core.identity import Identity
from uagents_core.registration import IdentityProof, RegistrationRequest

from agent_stream.uagents.local._agents import free_port

MAX_BODY = 2 * 2**20
MAX_HELD = 10_000


@dataclass
class Post:
    at: float  # time.monotonic() when it arrived
    size: int  # bytes of the body
    target: str
    payload: dict[str, Any]  # the decoded message


@dataclass
class Poll:
    at: float
    address: str
    held: int  # envelopes it was served


@dataclass
class _Held:
    id: str
    item: dict[str, Any]


@dataclass
class MailboxStandIn:
    """The stand-in; ``with MailboxStandIn() as box:`` serves it at ``box.url``."""

    port: int = field(default_factory=free_port)
    posts: list[Post] = field(default_factory=list)
    polls: list[Poll] = field(default_factory=list)
    deleted: int = 0
    refused: int = 0
    registered: list[str] = field(default_factory=list)  # agents that connected, in order

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._boxes: dict[str, list[_Held]] = {}  # an agent's mailbox, once it connected
        self._challenges: dict[str, str] = {}  # address -> the challenge it must sign
        self._proved: set[str] = set()
        app = Starlette(
            routes=[
                Route("/v2/identity/{address}/challenge", self._challenge, methods=["GET"]),
                Route("/v2/identity", self._prove, methods=["POST"]),
                Route("/v2/agents", self._register, methods=["POST"]),
                Route(DEFAULT_MAILBOX_PATH, self._submit, methods=["POST"]),
                Route("/v2/agents/{address}/mailbox", self._read, methods=["GET"]),
                Route("/v2/agents/{address}/mailbox/{id}", self._delete, methods=["DELETE"]),
            ]
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def url(self) -> str:
        """What an agent's ``agentverse=`` setting points at."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def submit_url(self) -> str:
        """Where peers post to a mailbox agent (its registered endpoint)."""
        return f"{self.url}{DEFAULT_MAILBOX_PATH}"

    def __enter__(self) -> MailboxStandIn:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the mailbox stand-in did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(10)

    def held(self) -> int:
        """Envelopes stored and not yet deleted."""
        with self._lock:
            return sum(len(b) for b in self._boxes.values())

    # -- endpoints ------------------------------------------------------------------------------
    async def _submit(self, request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_BODY:
            return JSONResponse({"detail": "envelope too large"}, status_code=413)
        try:
            env = Envelope.model_validate_json(body)
            if not env.verify():
                raise ValueError("bad signature")
            payload = json.loads(env.decode_payload())
        except Exception as exc:
            with self._lock:
                self.refused += 1
            return JSONResponse({"detail": f"invalid envelope: {exc}"[:200]}, status_code=400)
        now = datetime.now(timezone.utc)
        item = {
            "uuid": str(uuid.uuid4()),
            "envelope": json.loads(body),
            "received_at": now.isoformat(),
            "expires_at": (now + timedelta(days=1)).isoformat(),
        }
        with self._lock:
            box = self._boxes.get(env.target)
            if box is None:
                self.refused += 1
                return JSONResponse({"detail": "no mailbox for this agent"}, status_code=404)
            if len(box) >= MAX_HELD:
                return JSONResponse({"detail": "mailbox full"}, status_code=429)
            box.append(_Held(item["uuid"], item))
            self.posts.append(Post(time.monotonic(), len(body), env.target, payload))
        return JSONResponse({})

    async def _read(self, request: Request) -> Response:
        address = request.path_params["address"]
        if not _attested(request.headers.get("authorization", ""), address):
            return JSONResponse({"detail": "not authorised"}, status_code=401)
        with self._lock:
            if address not in self._boxes:
                return JSONResponse({"detail": "Agent mailbox not found"}, status_code=404)
            items = [h.item for h in self._boxes[address]]
            self.polls.append(Poll(time.monotonic(), address, len(items)))
        return JSONResponse(items)

    async def _delete(self, request: Request) -> Response:
        address, key = request.path_params["address"], request.path_params["id"]
        if not _attested(request.headers.get("authorization", ""), address):
            return JSONResponse({"detail": "not authorised"}, status_code=401)
        with self._lock:
            box = self._boxes.get(address, [])
            kept = [h for h in box if h.id != key]
            if len(kept) == len(box):
                return JSONResponse({"detail": "not found"}, status_code=404)
            self._boxes[address] = kept
            self.deleted += 1
        return JSONResponse({})

    async def _challenge(self, request: Request) -> Response:
        if not _user(request):
            return JSONResponse({"detail": "not authorised"}, status_code=401)
        address = request.path_params["address"][:100]
        with self._lock:
            challenge = self._challenges[address] = uuid.uuid4().hex
        return JSONResponse({"challenge": challenge})

    async def _prove(self, request: Request) -> Response:
        if not _user(request):
            return JSONResponse({"detail": "not authorised"}, status_code=401)
        try:
            proof = IdentityProof.model_validate_json(await request.body())
            with self._lock:
                expected = self._challenges.pop(proof.address, None)
            digest = hashlib.sha256(proof.challenge.encode()).digest()
            if proof.challenge != expected or not Identity.verify_digest(
                proof.address, digest, proof.challenge_response
            ):
                raise ValueError("the challenge was not signed by this address")
        except Exception as exc:
            return JSONResponse({"detail": f"identity not proved: {exc}"[:200]}, status_code=401)
        with self._lock:
            self._proved.add(proof.address)
        return JSONResponse({"address": proof.address})

    async def _register(self, request: Request) -> Response:
        if not _user(request):
            return JSONResponse({"detail": "not authorised"}, status_code=401)
        try:
            reg = RegistrationRequest.model_validate_json(await request.body())
        except Exception as exc:
            return JSONResponse({"detail": f"invalid registration: {exc}"[:200]}, status_code=400)
        with self._lock:
            if reg.address not in self._proved:
                return JSONResponse({"detail": "prove the identity first"}, status_code=403)
            self._boxes.setdefault(reg.address, [])
            self.registered.append(reg.address)
        return JSONResponse({"success": True})


def _user(request: Request) -> bool:
    """A user's bearer token (any: the stand-in has no accounts)."""
    return request.headers.get("authorization", "").startswith("Bearer ") and bool(
        request.headers["authorization"][7:].strip()
    )


def _attested(header: str, address: str) -> bool:
    """Whether ``header`` is ``Agent attr:<payload>:<signature>``, signed by ``address``'s key,
    valid now (uagents-core's ``compute_attestation``)."""
    scheme, _, token = header.partition(" ")
    parts = token.split(":")
    if scheme != "Agent" or len(parts) != 3 or parts[0] != "attr":
        return False
    try:
        payload = base64.b64decode(parts[1], validate=True)
        if len(payload) != 81:
            return False
        valid_from, valid_to = struct.unpack(">QQ", payload[33:49])
        now = time.time()
        if not valid_from - 5 <= now <= valid_to:
            return False
        return bool(Identity.verify_digest(address, hashlib.sha256(payload).digest(), parts[2]))
    except Exception:
        return False
