"""libsecp256k1 signatures (agent_stream.uagents.transport._signing) against uagents_core's own Identity:
each verifies the other's signatures (uagents' high-s ones included), both refuse the same
forged and malformed ones, and a protected agent signs and verifies this way over real HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from typing import Any

import bech32
import ecdsa
import pytest
from hostile_peer import CHAT, envelope, post, valid_question
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inprocess_agents import Pair, unprotected
from uagents_core.envelope import Envelope
from uagents_core.identity import Identity

from agent_stream.uagents import StreamingChat, _compat
from agent_stream.uagents.local._agents import endpoint_for
from agent_stream.uagents.transport import _signing as signing
from agent_stream.uagents.transport._signing import (
    HALF_N,
    FastEnvelope,
    FastIdentity,
    N,
    bech32_decode,
    bech32_encode,
    verify_digest,
)

pytestmark = pytest.mark.skipif(not signing.AVAILABLE, reason="coincurve is not installed")

SEEDS = st.text(min_size=1, max_size=40)
DIGESTS = st.binary(min_size=32, max_size=32)


def uagents_verifies(address: str, digest: bytes, signature: str) -> bool:
    try:
        return bool(Identity.verify_digest(address, digest, signature))
    except Exception:
        return False


def we_verify(address: str, digest: bytes, signature: str) -> bool:
    try:
        return verify_digest(address, digest, signature)
    except Exception:
        return False


def rs(signature: str) -> tuple[int, int]:
    raw = bech32_decode(signature, "sig")
    assert raw is not None and len(raw) == 64
    return int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")


def sig_of(r: int, s: int, size: int = 32) -> str:
    return bech32_encode("sig", r.to_bytes(size, "big") + s.to_bytes(size, "big"))


def reference_encode(hrp: str, data: bytes) -> str:
    five = bech32.convertbits(data, 8, 5)
    assert five is not None
    return bech32.bech32_encode(hrp, five)


def reference_decode(value: str) -> tuple[str, bytes] | None:
    hrp, five = bech32.bech32_decode(value)
    if not five or not hrp:
        return None
    raw = bech32.convertbits(five, 5, 8, False)
    return (hrp, bytes(raw)) if raw else None


# -- bech32 -------------------------------------------------------------------------------------------
@given(st.sampled_from(["sig", "agent", "a", "user"]), st.binary(max_size=80))
def test_bech32_encodes_as_the_reference_does(hrp: str, data: bytes) -> None:
    assert bech32_encode(hrp, data) == reference_encode(hrp, data)


@given(st.binary(min_size=1, max_size=80), st.data())
def test_bech32_decodes_only_what_the_reference_decodes_the_same_way(
    data: bytes, draw: st.DataObject
) -> None:
    text = reference_encode("sig", data)
    assert bech32_decode(text, "sig") == data
    i = draw.draw(st.integers(0, len(text) - 1))
    c = draw.draw(st.sampled_from("qpzry9x8gf2tvdw0s3jn54khce6mua7lQPZ1bio!é "))
    mutated = text[:i] + c + text[i + 1 :]
    ours = bech32_decode(mutated, "sig")
    if ours is not None:  # never accepts what the reference refuses or reads otherwise
        assert reference_decode(mutated) == ("sig", ours)


@given(st.text(max_size=120))
def test_bech32_decode_of_any_text_agrees_with_the_reference(text: str) -> None:
    ours = bech32_decode(text, "sig")
    if ours is not None:
        assert reference_decode(text) == ("sig", ours)


# The lengths agents use (a 64-byte signature, a 33-byte key) have a path of their own (masks
# and whole-integer steps, not a symbol at a time): the same answers as the reference there too.
FIXED = st.sampled_from([("sig", 64), ("agent", 33)])
TEXT_CHARS = "qpzry9x8gf2tvdw0s3jn54khce6mua7lQPZ1bio!_ +-é"


@given(FIXED, st.data())
def test_bech32_of_a_signature_or_key_encodes_as_the_reference_does(
    fixed: tuple[str, int], draw: st.DataObject
) -> None:
    hrp, size = fixed
    data = draw.draw(
        st.one_of(
            st.binary(min_size=size, max_size=size),
            st.sampled_from([bytes(size), b"\xff" * size, b"\x01".rjust(size, b"\0")]),
        )
    )
    text = reference_encode(hrp, data)
    assert bech32_encode(hrp, data) == text
    assert bech32_decode(text, hrp) == data


def agrees_with_the_reference(value: str, hrp: str, size: int) -> None:
    """Ours is the reference's reading; and a lower-case text the reference reads as ``size``
    bytes with ``hrp`` we read too (upper case goes uagents' own way, as before)."""
    ours = bech32_decode(value, hrp)
    theirs = reference_decode(value)
    if ours is not None:
        assert theirs == (hrp, ours)
    elif value == value.lower() and theirs is not None and theirs[0] == hrp:
        assert len(theirs[1]) != size


@given(FIXED, st.data())
def test_bech32_of_a_signature_or_key_decodes_only_what_the_reference_decodes_the_same_way(
    fixed: tuple[str, int], draw: st.DataObject
) -> None:
    hrp, size = fixed
    text = reference_encode(hrp, draw.draw(st.binary(min_size=size, max_size=size)))
    edits = draw.draw(
        st.lists(
            st.tuples(st.integers(0, len(text) - 1), st.sampled_from(TEXT_CHARS)),
            min_size=1,
            max_size=3,
        )
    )
    mutated = list(text)
    for i, c in edits:
        mutated[i] = c
    agrees_with_the_reference("".join(mutated), hrp, size)


@given(FIXED, st.data())
def test_any_text_of_a_signatures_length_decodes_as_the_reference_does(
    fixed: tuple[str, int], draw: st.DataObject
) -> None:
    hrp, size = fixed
    symbols = (size * 8 + 4) // 5 + 6
    body = draw.draw(st.text(alphabet=TEXT_CHARS, min_size=symbols, max_size=symbols))
    agrees_with_the_reference(f"{hrp}1{body}", hrp, size)


# -- signatures -------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(SEEDS, DIGESTS)
def test_each_side_verifies_the_others_signatures(seed: str, digest: bytes) -> None:
    stock = Identity.from_seed(seed, 0)
    fast = FastIdentity.of(stock)
    assert fast.address == stock.address and fast.pub_key == stock.pub_key
    ours = fast.sign_digest(digest)
    assert rs(ours)[1] <= HALF_N  # libsecp256k1 signs low-s
    assert uagents_verifies(stock.address, digest, ours)
    theirs = stock.sign_digest(digest)
    assert verify_digest(stock.address, digest, theirs)
    r, s = rs(theirs)
    flipped = sig_of(r, N - s)  # the same signature with the other s: high if it was low
    assert uagents_verifies(stock.address, digest, flipped)
    assert verify_digest(stock.address, digest, flipped)


def test_uagents_signs_high_s_half_the_time_and_we_verify_those() -> None:
    stock = Identity.from_seed("high s signer", 0)
    high = 0
    for i in range(40):
        digest = hashlib.sha256(str(i).encode()).digest()
        sig = stock.sign_digest(digest)
        if rs(sig)[1] > HALF_N:
            high += 1
            assert verify_digest(stock.address, digest, sig)
    assert high >= 5


def forgeries(identity: Identity, digest: bytes, sig: str, draw: st.DataObject) -> list[str]:
    r, s = rs(sig)
    bit = draw.draw(st.integers(0, 511))
    raw = bytearray(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
    raw[bit // 8] ^= 1 << (bit % 8)
    i = draw.draw(st.integers(0, len(sig) - 1))
    return [
        bech32_encode("sig", bytes(raw)),  # one bit of r or s changed, valid bech32
        sig[:i] + ("q" if sig[i] != "q" else "p") + sig[i + 1 :],  # a broken checksum
        sig_of(0, s),
        sig_of(r, 0),
        sig_of(N, s),
        sig_of(r, N),
        sig_of(r + N, s, 33),
        sig_of(r, s, 33),  # 66 bytes
        bech32_encode("sig", raw[:63]),  # 63 bytes
        bech32_encode("sog", bytes(raw)),
        sig.upper(),
        "",
        "sig1",
        "not a signature",
        Identity.from_seed("someone else", 0).sign_digest(digest),
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS, DIGESTS, st.data())
def test_forged_and_malformed_signatures_are_refused_as_uagents_refuses_them(
    seed: str, digest: bytes, draw: st.DataObject
) -> None:
    identity = Identity.from_seed(seed, 0)
    sig = identity.sign_digest(digest)
    for forged in forgeries(identity, digest, sig, draw):
        assert we_verify(identity.address, digest, forged) == uagents_verifies(
            identity.address, digest, forged
        ), forged
    other = hashlib.sha256(digest).digest()
    assert not we_verify(identity.address, other, sig)
    assert we_verify(identity.address, digest, sig.upper()) == uagents_verifies(
        identity.address, digest, sig.upper()
    )


@pytest.mark.parametrize(
    "address",
    [
        "agent1" + "q" * 58,
        "agent1qfoo",
        "user1qqqqq",
        "",
        bech32_encode("agent", b"\x02" + b"\xff" * 32),  # not a point of the curve
        bech32_encode("agent", b"\x04" + b"\x01" * 64),
        bech32_encode("agnt", b"\x02" + b"\x01" * 32),
    ],
)
def test_a_malformed_sender_address_is_refused(address: str) -> None:
    identity = Identity.from_seed("address test", 0)
    digest = hashlib.sha256(b"x").digest()
    sig = identity.sign_digest(digest)
    assert not we_verify(address, digest, sig)
    assert not uagents_verifies(address, digest, sig)


def test_sender_keys_are_cached_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signing, "MAX_KEYS", 3)
    digest = hashlib.sha256(b"cache").digest()
    identities = [FastIdentity.of(Identity.from_seed(f"cached {i}", 0)) for i in range(5)]
    for ident in identities:
        assert verify_digest(ident.address, digest, ident.sign_digest(digest))
    assert list(signing._KEYS)[-3:] == [i.address for i in identities[-3:]]
    assert len(signing._KEYS) <= 3


def test_without_coincurve_it_is_uagents_own_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signing, "AVAILABLE", False)
    stock = Identity.from_seed("no coincurve", 0)
    digest = hashlib.sha256(b"plain").digest()
    sig = stock.sign_digest(digest)
    assert verify_digest(stock.address, digest, sig)
    with pytest.raises(ecdsa.BadSignatureError):
        verify_digest(stock.address, hashlib.sha256(b"other").digest(), sig)


def test_a_fast_envelope_signs_and_verifies_like_uagents() -> None:
    stock = Identity.from_seed("envelope signer", 0)
    env = Envelope(
        version=1,
        sender=stock.address,
        target=stock.address,
        session=uuid.uuid4(),
        schema_digest=CHAT,
        expires=123,
        nonce=7,
    )
    env.encode_payload(valid_question())
    env.sign(FastIdentity.of(stock))
    assert env.verify()  # uagents' own verification
    fast = FastEnvelope.model_validate(env.model_dump())
    assert fast.verify()
    fast.payload = Envelope(**{**env.model_dump(), "payload": None}).payload
    with pytest.raises(ValueError):
        fast.verify()
    fast.signature = None
    with pytest.raises(ValueError, match="missing"):
        fast.verify()


# -- a protected agent over real HTTP ---------------------------------------------------------------


async def serving(pair: Pair, seed: str) -> tuple[Any, str]:
    server = pair.add(seed, StreamingChat())
    task = asyncio.create_task(server.start_server())
    pair.tasks.add(task)
    assert await server.listening() and server.local_port is not None
    return server, endpoint_for(server.local_port)


async def test_a_protected_agent_signs_with_libsecp256k1_and_keeps_its_address(pair: Pair) -> None:
    agent = pair.add("fast signer agent")
    identity = _compat.identity_of(agent)
    assert isinstance(identity, FastIdentity)
    assert agent.address == identity.address == Identity.from_seed("fast signer agent", 0).address
    digest = hashlib.sha256(b"ctx").digest()
    assert uagents_verifies(agent.address, digest, agent.sign_digest(digest))


async def test_the_http_edge_accepts_stock_and_fast_signatures_and_refuses_forged_ones(
    pair: Pair,
) -> None:
    server, endpoint = await serving(pair, "fast verifying server")
    loop = asyncio.get_running_loop()

    async def status(body: bytes) -> int:
        return await loop.run_in_executor(None, post, endpoint, body)

    stock = Identity.from_seed("stock sender", 0)
    highs = 0
    for i in range(12):  # uagents' signer: about half of these are high-s
        body = envelope(server.address, CHAT, valid_question(f"q{i}"), identity=stock)
        sig = Envelope.model_validate_json(body).signature
        assert sig is not None
        highs += rs(sig)[1] > HALF_N
        assert await status(body) == 200
    assert highs >= 1
    fast = FastIdentity.of(Identity.from_seed("fast sender", 0))
    assert await status(envelope(server.address, CHAT, valid_question(), identity=fast)) == 200
    assert (
        await status(envelope(server.address, CHAT, valid_question(), identity=stock, tamper=True))
        == 400
    )
    forged = Envelope.model_validate_json(
        envelope(server.address, CHAT, valid_question(), identity=stock)
    )
    r, s = rs(forged.signature or "")
    forged.signature = sig_of(r, (s + 1) % N)
    assert await status(forged.model_dump_json().encode()) == 400
    forged.signature = "sig1" + "q" * 100
    assert await status(forged.model_dump_json().encode()) == 400


async def test_an_unprotected_agent_accepts_what_a_fast_identity_signs(pair: Pair) -> None:
    server = unprotected(pair, "stock verifying server", StreamingChat())
    task = asyncio.create_task(server.start_server())
    pair.tasks.add(task)
    assert await server.listening() and server.local_port is not None
    endpoint = endpoint_for(server.local_port)
    fast = FastIdentity.of(Identity.from_seed("fast sender to stock", 0))
    body = envelope(server.address, CHAT, valid_question(), identity=fast)
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, post, endpoint, body) == 200
