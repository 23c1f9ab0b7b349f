"""A strict JSON reader: one value from text, or a StreamError saying what is wrong.

``json.loads`` accepts what JSON forbids and fails in ways a caller cannot type: NaN and
Infinity, integers of any size (a ``ValueError`` past 4,300 digits), lone surrogates such as
``"\\ud800"`` (which cannot be written back out as UTF-8), and nesting deep enough to raise
``RecursionError``. ``loads`` rejects each of these with ``error(reason)``:

- ``not JSON: <what> at column C`` (bad syntax) and ``invalid UTF-8 at byte K`` (bytes in);
- ``nested too deep (over 64 levels)``: found by a scan of the brackets outside strings before
  the parser runs, so the parser never recurses deeper than twice the cap;
- ``number out of range: ...``: integers outside [-2**63, 2**64) and floats that overflow;
- ``NaN is not JSON`` (and ``Infinity``, ``-Infinity``);
- ``invalid unicode escape (a lone surrogate)``, or ``not Unicode text`` for a ``str`` that
  already holds one.

Callers pick the error class (``InvalidMessage`` for Messages, ``WireError`` for wire items).

``dumps`` is the writer every wire here uses: compact JSON, UTF-8 characters kept as they are.

``loads`` reads with orjson (in C, about three times as fast), which refuses everything
listed above as well; the standard path runs for text orjson refuses (it says what is wrong)
and for text with a run of 19 digits (orjson reads an integer past 64 bits as a float). A
property test holds the two to the same values and the same errors. ``dumps`` stays on the
standard library: orjson writes floats otherwise (``0.000021`` for ``2.1e-05``); ``dumped_size``
(the bytes ``dumps`` would write) counts with orjson when there is no float.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from agent_stream.errors import InvalidJSON, StreamError

MAX_DEPTH = 64
INT_MIN = -(2**63)
INT_MAX = 2**64 - 1

_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Reject(Exception):
    """Raised inside the parser's hooks; turned into the caller's error class."""


def _int(s: str) -> int:
    if len(s) > 21:
        raise _Reject(f"number out of range: {s[:20]}...")
    n = int(s)
    if not INT_MIN <= n <= INT_MAX:
        raise _Reject(f"number out of range: {s}")
    return n


def _float(s: str) -> float:
    f = float(s)
    if f in (float("inf"), float("-inf")):
        raise _Reject(f"number out of range: {s[:20]}{'...' if len(s) > 20 else ''}")
    return f


def _constant(s: str) -> Any:
    raise _Reject(f"{s} is not JSON")


_DECODER = json.JSONDecoder(parse_int=_int, parse_float=_float, parse_constant=_constant)


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_QUOTE = json.encoder.encode_basestring  # a string's JSON, as _COMPACT writes it
# 19 digits in a row: maybe an integer orjson would read as a float. Found by a byte table
# (digits to "0", all else to " ") and a substring search: an eighth of a regex search's time.
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19


def dumps(value: Any) -> str:
    """Compact JSON, UTF-8 characters kept as they are: ``json.dumps(value, ensure_ascii=False,
    separators=(",", ":"))``, the very same text. An object or array without floats is written
    by orjson (which spells some floats otherwise; a tenth of the standard writer's time), a
    string by the standard writer's own quoting, anything else by one kept standard encoder.

    Args:
        value: a JSON value.
    """
    kind = value.__class__
    if kind is str:
        return _QUOTE(value)
    if (kind is dict or kind is list) and not _has_float(value):
        try:
            return orjson.dumps(value).decode()
        except TypeError:  # orjson's JSONEncodeError: a lone surrogate, an int over 64 bits
            pass
    return _COMPACT.encode(value)


def dumped_size(value: Any) -> int:
    """UTF-8 bytes of ``dumps(value)``, counted without the standard library's writer when
    orjson writes the same text: a value without floats (orjson spells some otherwise).

    Args:
        value: a JSON value.
    """
    if not _has_float(value):
        try:
            return len(orjson.dumps(value))
        except TypeError:  # orjson's JSONEncodeError: e.g. a lone surrogate; dumps decides
            pass
    return utf8_size(dumps(value))


def utf8_size(text: str) -> int:
    """UTF-8 bytes of a text (without encoding it when it is ASCII).

    Args:
        text: the text.
    """
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _has_float(value: Any) -> bool:
    kind = value.__class__
    if kind is float:
        return True
    if kind is dict:
        for v in value.values():
            if _has_float(v):
                return True
    elif kind is list:
        for v in value:
            if _has_float(v):
                return True
    elif kind is not str and kind is not int and kind is not bool and value is not None:
        return True  # anything else (a subclass, a tuple): the standard library's way
    return False


def too_deep(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether brackets outside strings nest deeper than ``limit`` somewhere in ``raw``.

    Linear and in C: escapes are dropped, strings cut out, the brackets kept, then innermost
    ``[]`` pairs removed once per level. Unbalanced text counts the opens left unclosed.

    Args:
        raw: the JSON text, UTF-8.
        limit: the deepest nesting allowed.
    """
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(unescaped.split(b'"')[0::2])
    br = outside.translate(_BRACKETS, _NOT_BRACKETS)
    for _ in range(limit):
        reduced = br.replace(b"[]", b"")
        if len(reduced) == len(br):  # no pair left: "]]][[[" at most
            return br.count(b"[") > limit
        br = reduced
        if not br:
            return False
    return b"[]" in br or br.count(b"[") > limit


def _walk_strings(value: Any) -> bool:
    """Whether any string (or key) in decoded JSON holds a lone surrogate; iterative."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if _SURROGATE.search(v):
                return True
        elif isinstance(v, dict):
            for k, x in v.items():
                if _SURROGATE.search(k):
                    return True
                stack.append(x)
        elif isinstance(v, list):
            stack.extend(v)
    return False


def loads(
    text: str | bytes, error: type[StreamError] = InvalidJSON, *, max_depth: int = MAX_DEPTH
) -> Any:
    """The one JSON value in ``text``, which must be strict JSON.

    Args:
        text: the JSON text, as a string or UTF-8 bytes.
        error: the StreamError subclass raised when it is not strict JSON.
        max_depth: the deepest nesting of arrays and objects allowed.

    Raises:
        StreamError: ``error(reason)``, and never anything else: not RecursionError,
            ValueError or UnicodeError.
    """
    if isinstance(text, (bytes, bytearray)):
        raw = bytes(text)
        try:
            s = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise error(f"invalid UTF-8 at byte {exc.start + 1}") from None
    else:
        s = text
        if not s.isascii():
            try:
                raw = s.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise error(
                    f"not Unicode text (a lone surrogate at character {exc.start + 1})"
                ) from None
        else:
            raw = s.encode("ascii")
    if too_deep(raw, max_depth):
        raise error(f"nested too deep (over {max_depth} levels)")
    if _LONG_RUN not in raw.translate(_DIGITS):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # the standard path says what is wrong
    try:
        value = _DECODER.decode(s)
    except json.JSONDecodeError as exc:
        raise error(f"not JSON: {exc.msg} at column {exc.colno}") from None
    except _Reject as exc:
        raise error(str(exc)) from None
    except RecursionError:  # unreachable after too_deep; kept so no RecursionError escapes
        raise error(f"nested too deep (over {max_depth} levels)") from None
    if _SURROGATE_ESCAPE.search(s) and _walk_strings(value):
        raise error("invalid unicode escape (a lone surrogate)")
    return value


def has_surrogate(s: str) -> bool:
    """Whether ``s`` holds a lone surrogate (cannot be written as UTF-8).

    Args:
        s: the string.
    """
    return _SURROGATE.search(s) is not None
