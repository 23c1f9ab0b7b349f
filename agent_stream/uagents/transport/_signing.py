"""Envelope signatures with libsecp256k1 (``coincurve``), byte-compatible with uagents' own.

uagents (uagents-core 0.4) signs and verifies envelopes with the pure-Python ``ecdsa`` package:
~0.4 ms to sign and ~1.7 ms to verify (decompressing the sender's public key every time), most
of an envelope's CPU. libsecp256k1 does the pair in well under 0.1 ms. The formats stay
uagents': the signature is ``bech32("sig", r || s)`` over the envelope's SHA-256 digest, the
sender's key is the 33-byte compressed point its ``agent1...`` address encodes.

- :class:`FastIdentity` is a uagents ``Identity`` (same key, same address) whose
  ``sign_digest`` uses libsecp256k1: its signatures are low-s (RFC 6979), which uagents'
  verification accepts. :func:`speed_up` gives one agent such an identity (its contexts sign
  with it from then on); nothing else in the process changes.
- :func:`verify_digest` checks a signature the way ``Identity.verify_digest`` does. uagents'
  signatures are high-s half the time, which libsecp256k1 refuses as they are, so ``s`` is
  normalized to ``n - s`` first (the same signature, mathematically). Decoded sender keys are
  cached (:data:`MAX_KEYS`, least recently used forgotten first). Anything outside the common
  shape (a 33-byte key, a 64-byte signature with ``0 < r, s < n``, lower-case bech32) goes
  uagents' own way, so nothing uagents accepts is refused here and nothing it refuses passes.
- :class:`FastEnvelope` is uagents' ``Envelope`` verifying with :func:`verify_digest`; the
  agent's HTTP edge (:mod:`._http_edge`) parses incoming envelopes as FastEnvelopes.

Without ``coincurve`` installed (:data:`AVAILABLE` False), everything here is uagents' own path.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import ecdsa
from uagents_core.envelope import Envelope
from uagents_core.identity import Identity

from agent_stream.uagents import _compat

coincurve: Any
try:
    import coincurve
except ImportError:  # pragma: no cover - coincurve is a dependency; kept optional at run time
    coincurve = None

__all__ = [
    "AVAILABLE",
    "MAX_KEYS",
    "FastEnvelope",
    "FastIdentity",
    "bech32_decode",
    "bech32_encode",
    "speed_up",
    "verify_digest",
]

#: Whether libsecp256k1 (``coincurve``) is installed.
AVAILABLE = coincurve is not None
#: Sender public keys kept decoded.
MAX_KEYS = 4096

N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141  # secp256k1's order
HALF_N = N // 2

# -- bech32, as the reference implementation uagents uses, with table-driven loops -----------------
CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_VALUE = {c: i for i, c in enumerate(CHARSET)}
_GEN = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)


def _gen_table() -> tuple[int, ...]:
    table = []
    for top in range(32):
        x = 0
        for i in range(5):
            if (top >> i) & 1:
                x ^= _GEN[i]
        table.append(x)
    return tuple(table)


_TABLE = _gen_table()


def _polymod(values: Any, chk: int = 1) -> int:
    table = _TABLE
    for v in values:
        chk = ((chk & 0x1FFFFFF) << 5 ^ v) ^ table[chk >> 25]
    return chk


def _hrp_state(hrp: str) -> int:
    return _polymod([ord(x) >> 5 for x in hrp] + [0] + [ord(x) & 31 for x in hrp])


_HRP_STATE: dict[str, int] = {}


def _hrp(hrp: str) -> int:
    """The checksum state after ``hrp`` (kept for a few, the hrps agents use)."""
    state = _HRP_STATE.get(hrp)
    if state is None:
        state = _hrp_state(hrp)
        if len(_HRP_STATE) < 16:
            _HRP_STATE[hrp] = state
    return state


def _encode_any(hrp: str, data: bytes) -> str:
    """:func:`bech32_encode` for any length, a symbol at a time."""
    bits = len(data) * 8
    pad = -bits % 5
    n = int.from_bytes(data, "big") << pad
    count = (bits + pad) // 5
    five = [(n >> (5 * (count - 1 - i))) & 31 for i in range(count)]
    chk = _polymod([*five, 0, 0, 0, 0, 0, 0], _hrp(hrp)) ^ 1
    five += [(chk >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join([CHARSET[d] for d in five])


def _decode_any(value: str, hrp: str) -> bytes | None:
    """:func:`bech32_decode` for any length, a symbol at a time (``value`` is a str that
    starts with ``hrp`` and ``1``)."""
    body = value[len(hrp) + 1 :]
    if len(body) < 7 or len(hrp) > 82 or "1" in body:
        return None
    get = _VALUE.get
    five = [get(c, -1) for c in body]
    if -1 in five or _polymod(five, _hrp(hrp)) != 1:
        return None
    five = five[:-6]
    bits = len(five) * 5
    extra = bits % 8
    n = 0
    for v in five:
        n = n << 5 | v
    if extra >= 5 or n & ((1 << extra) - 1):  # uagents refuses these paddings
        return None
    size = bits // 8
    if size == 0:
        return None
    return (n >> extra).to_bytes(size, "big")


class _Fixed:
    """bech32 of ``nbytes`` bytes with ``hrp`` (a signature, an address's key) without a Python
    step per symbol: a quarter of the time (measured: 15 us to encode a signature and 12 to
    decode one, against 60 and 50). One of each per envelope, on either side.

    The checksum is linear over GF(2) in the data's bits (the 8-to-5-bit regrouping only moves
    them): it is the checksum of as many zero bytes XOR, for each of its 30 bits, the parity of
    the data's bits under one mask (computed once, on first use). To encode, seven rounds of
    masks move each 5-bit symbol into a byte of its own, which a translation table turns into
    its letter; to decode, the letters are base-32 digits ``int()`` reads. Only the lengths
    agents use get masks: a peer cannot make us compute more.
    """

    def __init__(self, hrp: str, nbytes: int) -> None:
        self.hrp = hrp
        self.nbytes = nbytes
        self.count = (nbytes * 8 + 4) // 5  # data symbols
        self.pad = self.count * 5 - nbytes * 8  # zero bits after the data
        self.letters = len(hrp) + 1 + self.count + 6  # the whole text's length
        self._total = self.count + 6  # symbols, the checksum's six included
        self._masks: tuple[int, ...] = ()
        self._zero = 0

    def _build(self) -> tuple[int, ...]:
        count, pad = self.count, self.pad
        self._zero = _polymod([0] * (count + 6), _hrp(self.hrp)) ^ 1
        masks = [0] * 30  # masks[i]: the data bits that flip the checksum's bit 29 - i
        for k in range(self.nbytes * 8):
            n = 1 << (k + pad)
            five = [(n >> (5 * (count - 1 - j))) & 31 for j in range(count)]
            flips = _polymod([*five, 0, 0, 0, 0, 0, 0], 0)
            for i in range(30):
                if flips >> (29 - i) & 1:
                    masks[i] |= 1 << k
        self._masks = tuple(masks)
        return self._masks

    def _checksum(self, n: int) -> int:
        """The checksum symbols (30 bits) of the data whose big-endian integer is ``n``."""
        chk = 0
        for mask in self._masks or self._build():
            chk = chk << 1 | (n & mask).bit_count() & 1
        return chk ^ self._zero

    def encode(self, data: bytes) -> str:
        value = int.from_bytes(data, "big")
        n = (value << self.pad + 30) | self._checksum(value)
        for keep, move, shift in _SPREAD:  # each 5-bit symbol into a byte of its own
            n = (n & keep) | (n & move) << shift
        letters = n.to_bytes(_SLOTS, "big").translate(_LETTER)[-self._total :]
        return self.hrp + "1" + letters.decode("ascii")

    def decode(self, value: str) -> bytes | None:
        body = value[len(self.hrp) + 1 :]
        try:
            n = int(body.translate(_TO_DIGIT), 32)  # any other character: ValueError
        except ValueError:
            return None
        data_bits = n >> 30
        if data_bits & ((1 << self.pad) - 1):  # uagents refuses a padding that is not zeros
            return None
        data = data_bits >> self.pad
        if n & 0x3FFFFFFF != self._checksum(data):
            return None
        return data.to_bytes(self.nbytes, "big")


_SLOTS = 128  # symbols _SPREAD lays out (at most)


def _spread_masks() -> tuple[tuple[int, int, int], ...]:
    """Masks that move the 5-bit symbols of an integer into one byte each, in 7 rounds: a
    group of ``g`` symbols (at 5 bits each, the bottom of an ``8g``-bit slot) sends its upper
    half ``3g/2`` bits up, halving the groups, until each symbol sits in a byte."""
    rounds = []
    g = _SLOTS
    while g > 1:
        half = g // 2
        keep = move = 0
        for slot in range(_SLOTS // g):
            base = slot * 8 * g
            keep |= ((1 << 5 * half) - 1) << base
            move |= ((1 << 5 * half) - 1) << (base + 5 * half)
        rounds.append((keep, move, 3 * half))
        g = half
    return tuple(rounds)


_SPREAD = _spread_masks()
_LETTER = bytes.maketrans(bytes(range(32)), CHARSET.encode())
# bech32 letters as base-32 digits; every other ASCII character as one int() refuses
_TO_DIGIT = {c: "!" for c in range(128)}
_TO_DIGIT.update({ord(c): "0123456789abcdefghijklmnopqrstuv"[i] for i, c in enumerate(CHARSET)})
_FIXED = {(f.hrp, f.nbytes): f for f in (_Fixed("sig", 64), _Fixed("agent", 33))}
_FIXED_TEXT = {(f.hrp, f.letters): f for f in _FIXED.values()}


def bech32_encode(hrp: str, data: bytes) -> str:
    """``data`` as bech32 with ``hrp``: what uagents_core's encoder gives (8-bit to 5-bit,
    zero-padded).

    Args:
        hrp: the human-readable part (``sig``, ``agent``).
        data: the bytes to encode.
    """
    fixed = _FIXED.get((hrp, len(data)))
    return fixed.encode(data) if fixed is not None else _encode_any(hrp, data)


def bech32_decode(value: str, hrp: str) -> bytes | None:
    """The bytes of ``value`` when it is lower-case bech32 with ``hrp`` that uagents_core
    decodes the same way; else None (the caller then asks uagents).

    Args:
        value: the bech32 text.
        hrp: the human-readable part it must have.
    """
    if not isinstance(value, str) or not value.startswith(hrp + "1"):
        return None
    fixed = _FIXED_TEXT.get((hrp, len(value)))
    if fixed is not None and value.isascii():
        return fixed.decode(value)
    return _decode_any(value, hrp)


# -- keys and signatures ---------------------------------------------------------------------------
_KEYS: OrderedDict[str, Any] = OrderedDict()


def _public_key(address: str) -> Any:
    """The sender's decoded key (cached), or None when it is not in the common shape."""
    key = _KEYS.get(address)
    if key is not None:
        _KEYS.move_to_end(address)
        return key
    raw = bech32_decode(address, "agent")
    if raw is None or len(raw) != 33 or raw[0] not in (2, 3):
        return None
    try:
        key = coincurve.PublicKey(raw)
    except Exception:  # not a point of the curve: uagents' way refuses it with its own error
        return None
    _KEYS[address] = key
    while len(_KEYS) > MAX_KEYS:
        _KEYS.popitem(last=False)
    return key


def _der_int(x: int) -> bytes:
    raw = x.to_bytes((x.bit_length() + 8) // 8, "big")  # room for a leading zero byte
    return b"\x02" + bytes([len(raw)]) + raw


def _der(r: int, s: int) -> bytes:
    body = _der_int(r) + _der_int(s)
    return b"\x30" + bytes([len(body)]) + body


class BadSignature(ValueError):
    """A signature that does not verify (uagents raises ecdsa's BadSignatureError)."""


def verify_digest(address: str, digest: bytes, signature: str) -> bool:
    """True when ``signature`` signs ``digest`` by ``address``'s key; raises otherwise.

    Same accepted set as uagents_core's ``Identity.verify_digest`` (which is called for any
    input outside the common shape, and always when coincurve is missing).

    Args:
        address: the signer's ``agent1...`` address.
        digest: the 32-byte digest signed.
        signature: the ``sig1...`` signature.
    """
    if AVAILABLE and len(digest) == 32:
        key = _public_key(address)
        raw = bech32_decode(signature, "sig") if key is not None else None
        if raw is not None and len(raw) == 64:
            r = int.from_bytes(raw[:32], "big")
            s = int.from_bytes(raw[32:], "big")
            if 0 < r < N and 0 < s < N:
                if s > HALF_N:  # uagents' signer does not normalize; libsecp256k1 wants low-s
                    s = N - s
                if key.verify(_der(r, s), digest, hasher=None):
                    return True
                raise BadSignature("Signature verification failed")
    return bool(Identity.verify_digest(address, digest, signature))


class FastIdentity(Identity):  # type: ignore[misc]
    """uagents' ``Identity`` (same key and address) signing digests with libsecp256k1.

    Args:
        signing_key: the agent's secp256k1 key, as uagents' ``Identity`` takes it.
    """

    def __init__(self, signing_key: ecdsa.SigningKey) -> None:
        super().__init__(signing_key)
        self._fast = coincurve.PrivateKey(bytes.fromhex(self.private_key)) if AVAILABLE else None

    @classmethod
    def of(cls, identity: Identity) -> FastIdentity:
        """A FastIdentity with ``identity``'s key.

        Args:
            identity: a uagents ``Identity``.
        """
        if isinstance(identity, FastIdentity):
            return identity
        key = ecdsa.SigningKey.from_string(
            bytes.fromhex(identity.private_key), curve=ecdsa.SECP256k1, hashfunc=hashlib.sha256
        )
        return cls(key)

    def sign_digest(self, digest: bytes) -> str:
        """``bech32("sig", r || s)`` of ``digest``, as uagents' signer gives (low-s here).

        Args:
            digest: the 32-byte digest to sign (another length: signed by uagents' own signer).
        """
        if self._fast is None or len(digest) != 32:
            return str(super().sign_digest(digest))
        return bech32_encode("sig", self._fast.sign_recoverable(digest, hasher=None)[:64])


class FastEnvelope(Envelope):  # type: ignore[misc]
    """uagents' ``Envelope``, its signature verified by :func:`verify_digest`."""

    def verify(self) -> bool:
        if self.signature is None:
            raise ValueError("Envelope signature is missing")
        return verify_digest(self.sender, self._digest(), self.signature)


def speed_up(agent: Any) -> bool:
    """Make ``agent`` sign its envelopes with libsecp256k1 (idempotent).

    Returns whether it does (False without coincurve). The agent keeps its key and address.

    Args:
        agent: a ``uagents.Agent``.
    """
    if not AVAILABLE:
        return False
    current = _compat.identity_of(agent)
    if not isinstance(current, FastIdentity):
        fast = FastIdentity.of(current)
        if fast.address != current.address:  # pragma: no cover - a different key scheme
            return False
        _compat.set_identity(agent, fast)
    return True
