"""The strict JSON reader (agent_stream.jsontext): what it rejects, and that it raises nothing else."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stream import jsontext
from agent_stream.errors import InvalidJSON, StreamError, WireError


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{bad", "not JSON: Expecting property name enclosed in double quotes at column 2"),
        ("[" * 65 + "]" * 65, "nested too deep (over 64 levels)"),
        ('{"a":' * 65 + "1" + "}" * 65, "nested too deep"),
        ("[" * 100_000, "nested too deep"),
        (str(2**64), "number out of range"),
        (str(-(2**63) - 1), "number out of range"),
        ("1" * 5000, "number out of range"),
        ("1e999", "number out of range"),
        ("NaN", "NaN is not JSON"),
        ("[Infinity]", "Infinity is not JSON"),
        ('"\\ud800"', "invalid unicode escape"),
        ('"\\uDFFF x"', "invalid unicode escape"),
        ('{"\\udbff": 1}', "invalid unicode escape"),
        ('"\ud800"', "not Unicode text"),
        (b'"\xff"', "invalid UTF-8 at byte 2"),
        (b'"\xed\xa0\x80"', "invalid UTF-8 at byte 2"),
    ],
)
def test_rejects_what_json_forbids_or_python_cannot_take(text: str | bytes, reason: str) -> None:
    with pytest.raises(InvalidJSON) as info:
        jsontext.loads(text)
    assert str(info.value).startswith(reason)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("[" * 64 + "]" * 64, json.loads("[" * 64 + "]" * 64)),
        ('"[[[[' + "[" * 500 + '"', "[[[[" + "[" * 500),
        (
            '["\\\\", ' + "[" * 60 + "]" * 60 + "]",
            json.loads('["\\\\", ' + "[" * 60 + "]" * 60 + "]"),
        ),
        ('"\\"[[[" ', '"[[['),
        (str(2**64 - 1), 2**64 - 1),
        (str(-(2**63)), -(2**63)),
        ('"\\ud83d\\ude00"', "\U0001f600"),
        ("1.5e300", 1.5e300),
    ],
)
def test_accepts_strict_json_at_the_limits(text: str, value: Any) -> None:
    assert jsontext.loads(text) == value


def test_the_caller_picks_the_error_class() -> None:
    with pytest.raises(WireError, match="NaN"):
        jsontext.loads("NaN", WireError)
    assert issubclass(InvalidJSON, StreamError) and issubclass(InvalidJSON, ValueError)


def reference_depth(s: str) -> int:
    """Deepest bracket nesting outside strings, one character at a time, as far as a parser
    can go: a close with nothing open is ignored, a backslash outside a string ends it."""
    depth = best = 0
    in_string = escaped = False
    for ch in s:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == "\\":
            break
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth = max(depth - 1, 0)
    return best


_json = st.recursive(
    st.one_of(st.integers(), st.text(alphabet='[]{}"\\ab', max_size=5)),
    lambda kids: st.one_of(
        st.lists(kids, max_size=3),
        st.dictionaries(st.text('[]{}"\\', max_size=3), kids, max_size=3),
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(_json, st.integers(0, 8))
def test_too_deep_agrees_with_a_character_scan_on_valid_json(value: Any, limit: int) -> None:
    s = json.dumps(value)
    assert jsontext.too_deep(s.encode(), limit) == (reference_depth(s) > limit)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='[]{}"\\ a1,:', max_size=200), st.integers(0, 6))
def test_on_any_text_the_parser_never_nests_past_twice_the_limit_unless_too_deep(
    s: str, limit: int
) -> None:
    if not jsontext.too_deep(s.encode(), limit):
        assert reference_depth(s) <= 2 * limit


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200)))
def test_raises_nothing_but_the_error_class(text: str | bytes) -> None:
    try:
        value = jsontext.loads(text)
    except InvalidJSON:
        return
    json.dumps(value, allow_nan=False).encode("utf-8")  # strict JSON, valid UTF-8 back out


# -- the pure APIs read JSON through it ---------------------------------------------------------
@pytest.mark.parametrize(
    "text", ["[" * 100_000, "1" * 5000, '{"content": [], "x": NaN}', '"\\ud800"']
)
def test_parse_chat_raises_wire_error_for_any_text(text: str) -> None:
    from agent_stream.adapters.chat import parse_chat

    with pytest.raises(WireError):
        parse_chat(text)


@pytest.mark.parametrize(
    "line",
    [
        "data: " + "[" * 100_000,
        "data: " + "9" * 5000,
        'data: {"choices": [], "x": Infinity}',
        'data: {"choices": [], "usage": {"prompt_tokens": "lots"}}',
        'data: {"choices": [], "usage": {"total_tokens": 1.5}}',
    ],
)
def test_the_openai_decoder_raises_wire_error_and_still_ends_the_stream(line: str) -> None:
    from agent_stream.adapters.openai import OpenAISSEDecoder

    dec = OpenAISSEDecoder()
    dec.feed_line('data: {"id": "c", "choices": [{"index": 0, "delta": {"content": "ok"}}]}')
    with pytest.raises(WireError):
        dec.feed_line(line)
    end = dec.close()  # stream_end's data is built: no ValidationError from a bad usage
    assert end[-1].event == "stream_end"


def test_a_tagged_chat_message_with_props_nested_too_deep_is_a_warning() -> None:
    import uuid

    from uagents_core.contrib.protocols.chat import ChatMessage, MetadataContent

    from agent_stream.adapters.chat import ChatDecoder

    md = {
        "agent_stream": "1",
        "op": "message",
        "type": "x",
        "message_id": "M1",
        "props": "[" * 5000 + "]" * 5000,
        "seq": "1",
        "conversation": "c",
    }
    chat = ChatMessage(msg_id=uuid.uuid4(), content=[MetadataContent(metadata=md)])
    dec = ChatDecoder()
    assert dec.feed("agent1q", chat, 0.0) == []
    assert [w.code for w in dec.drain_warnings()] == ["bad_metadata"]


# -- the orjson paths write and read exactly what the standard library does ------------------------


def _standard_loads(text: str | bytes) -> Any:
    """jsontext.loads on its standard-library path only (orjson refusing everything)."""
    import orjson

    real = orjson.loads

    def refuse(_: Any) -> Any:
        raise orjson.JSONDecodeError("refused", "", 0)

    orjson.loads = refuse
    try:
        return jsontext.loads(text)
    finally:
        orjson.loads = real


def _outcome(f: Any, arg: Any) -> tuple[str, str]:
    try:
        v = f(arg)
    except StreamError as exc:
        return "error", str(exc)
    return "value", _typed(v)


def _typed(v: Any) -> str:
    """A value with its types spelled out: 1 and 1.0, 0.0 and -0.0 differ."""
    if isinstance(v, dict):
        return "{" + ",".join(f"{k!r}:{_typed(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(map(_typed, v)) + "]"
    return f"{type(v).__name__}:{v!r}"


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(_json_values, st.sampled_from(["compact", "ascii", "spaced"]), st.data())
def test_loads_reads_what_the_standard_path_reads_and_refuses_alike(
    value: Any, style: str, data: st.DataObject
) -> None:
    text = json.dumps(
        value,
        ensure_ascii=style == "ascii",
        separators=(",", ":") if style == "compact" else (", ", ": "),
    )
    if data.draw(st.booleans()):  # a few characters changed: broken JSON, other values
        chars = list(text)
        for _ in range(data.draw(st.integers(1, 3))):
            i = data.draw(st.integers(0, max(0, len(chars) - 1)))
            chars[i:i] = data.draw(st.sampled_from(list('"\\{}[],:.e-0123456789 nutrfalse\ud800')))
        text = "".join(chars)
    raw = text.encode("utf-8", "surrogatepass")
    assert _outcome(jsontext.loads, text) == _outcome(_standard_loads, text)
    assert _outcome(jsontext.loads, raw) == _outcome(_standard_loads, raw)


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(jsontext.INT_MIN, jsontext.INT_MAX)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=1000, deadline=None)
@given(_JSON_VALUES)
def test_dumped_size_is_the_utf8_size_of_dumps(value: Any) -> None:
    """Counted with orjson when no float is in it, the same bytes the standard writer's text
    has: control characters, quotes, backslashes and every plane of Unicode included."""
    assert jsontext.dumped_size(value) == len(jsontext.dumps(value).encode("utf-8"))


@settings(max_examples=1000, deadline=None)
@given(_JSON_VALUES)
def test_dumps_writes_the_standard_writers_very_text(value: Any) -> None:
    """orjson writes objects and arrays without floats, the standard quoting writes strings:
    the text is ``json.dumps(ensure_ascii=False)``'s, character for character."""
    assert jsontext.dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize(
    "value",
    [
        {"content": "a\ud800b"},  # a lone surrogate: orjson refuses it
        [2**64, -(2**63) - 1],  # past 64 bits: orjson refuses them
        {"n": 1e16, "m": [0.1, -0.0]},  # floats: orjson spells some otherwise
        ("a", 1),  # a tuple: not a list
        '\u2028\x7f\x00"\\',
    ],
)
def test_dumps_of_what_orjson_writes_otherwise_is_the_standard_text(value: Any) -> None:
    assert jsontext.dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.integers(-(10**21), 10**21) | st.text(st.sampled_from('0123456789a"')), max_size=6)
)
def test_long_integers_are_read_exactly_or_refused(value: list[Any]) -> None:
    """19 digits or more in a row (maybe an integer orjson would read as a float) go the
    standard way: an integer in range comes back exact, one out of range is refused."""
    text = json.dumps(value)
    if all(jsontext.INT_MIN <= v <= jsontext.INT_MAX for v in value if isinstance(v, int)):
        assert jsontext.loads(text) == value
    else:
        with pytest.raises(InvalidJSON, match="number out of range"):
            jsontext.loads(text)


def test_dumped_size_of_a_lone_surrogate_fails_as_encoding_dumps_would() -> None:
    with pytest.raises(UnicodeEncodeError):
        jsontext.dumped_size({"content": "a\ud800b"})
