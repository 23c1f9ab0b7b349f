"""Delta paths and actions on plain data (agent_stream.merge)."""

from __future__ import annotations

import pytest

from agent_stream.errors import DeltaError
from agent_stream.merge import apply, copy_json, read_path, value_at


def test_append_concatenates_strings_and_extends_lists() -> None:
    props = {"content": "Hello", "rows": [1]}
    apply(props, "append", None, {"content": " World"})
    apply(props, "append", "rows", {"rows": [2, 3]})
    apply(props, "append", "rows", {"rows": 4})
    assert props == {"content": "Hello World", "rows": [1, 2, 3, 4]}


def test_paths_with_numeric_indexes_read_the_chunk_at_the_same_path() -> None:
    props = {"rows": [{"temp": 1}, {"temp": 2}]}
    chunk = {"rows": [None, {"temp": 25}]}
    assert read_path(chunk, "rows.1.temp") == 25
    apply(props, "set", "rows.1.temp", chunk)
    assert props == {"rows": [{"temp": 1}, {"temp": 25}]}


def test_missing_intermediates_are_created_as_objects() -> None:
    props: dict = {}
    apply(props, "set", "user.profile.name", {"user": {"profile": {"name": "Ada"}}})
    assert props == {"user": {"profile": {"name": "Ada"}}}


def test_replace_without_path_replaces_all_props() -> None:
    assert apply({"a": 1}, "replace", None, {"b": 2}) == {"b": 2}


def test_merge_is_shallow() -> None:
    props = {"user": {"name": "Ada", "langs": {"py": 1}}, "x": 1}
    apply(props, "merge", "user", {"user": {"langs": {"go": 2}}})
    # shallow: the nested object is replaced, not merged key by key
    assert props == {"user": {"name": "Ada", "langs": {"go": 2}}, "x": 1}
    assert apply({"a": 1, "b": 1}, "merge", None, {"b": 2}) == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    ("props", "action", "path", "chunk", "needle"),
    [
        ({"content": "x"}, "set", "content.x", {"content": {"x": 1}}, "goes through a string"),
        ({"rows": [1]}, "set", "rows.5", {"rows": [0, 0, 0, 0, 0, 9]}, "past the end"),
        ({"content": "x"}, "append", "content", {"content": ["a"]}, "onto a string"),
        ({"o": {"a": 1}}, "merge", "o", {"o": 3}, "merge a number"),
        ({"o": "s"}, "merge", "o", {"o": {"a": 1}}, "merge into a string"),
        ({}, "explode", None, {}, "unknown delta_action"),
        ({}, "set", "a", {"b": 1}, "nothing at delta_path"),
        ({"rows": [1]}, "set", "rows.x", {"rows": {"x": 1}}, "not an index"),
        ({}, "set", "a..b", {}, "empty segment"),
    ],
)
def test_bad_deltas_raise_and_leave_props_untouched(props, action, path, chunk, needle) -> None:
    before = copy_json(props)
    with pytest.raises(DeltaError, match=needle):
        apply(props, action, path, chunk)
    assert props == before


def test_values_are_copied_not_aliased() -> None:
    chunk = {"rows": [{"a": 1}]}
    props: dict = {}
    apply(props, "append", "rows", chunk)
    props["rows"][0]["a"] = 99
    assert chunk == {"rows": [{"a": 1}]}


def test_value_at_builds_chunk_props_for_a_path() -> None:
    assert value_at("rows.1.temp", 25) == {"rows": [None, {"temp": 25}]}
    assert read_path(value_at("a.b", 1), "a.b") == 1
    with pytest.raises(DeltaError):
        value_at("0.a", 1)


def test_a_string_appended_onto_a_list_is_a_delta_error_and_changes_nothing() -> None:
    props = {"rows": [1]}
    with pytest.raises(DeltaError, match="string onto a list at rows"):
        apply(props, "append", "rows", {"rows": "s"})
    with pytest.raises(DeltaError, match="list onto a string"):
        apply({"s": "t"}, "append", "s", {"s": [1]})
    assert props == {"rows": [1]}
    apply(props, "append", "rows", {"rows": {"k": 1}})  # one other value is still added
    assert props == {"rows": [1, {"k": 1}]}


def test_a_string_onto_a_list_deep_inside_an_object_append_is_found_before_any_write() -> None:
    props = {"a": {"b": "x", "c": [1]}}
    with pytest.raises(DeltaError, match=r"a\.c"):
        apply(props, "append", None, {"a": {"b": "y", "c": "z"}})
    assert props == {"a": {"b": "x", "c": [1]}}


def nested(depth: int, leaf: object) -> dict:
    d: dict = {"a": leaf}
    for _ in range(depth - 1):
        d = {"a": d}
    return d


def chain(d: object) -> tuple[int, object]:
    """(depth, leaf) of a chain of {"a": ...}, walked without recursion."""
    n = 0
    while isinstance(d, dict):
        d, n = d["a"], n + 1
    return n, d


def test_copy_and_append_handle_any_depth_without_recursion() -> None:
    deep = nested(5000, "x")
    copy = copy_json(deep)
    assert chain(copy) == (5000, "x") and copy is not deep and copy["a"] is not deep["a"]
    props = copy_json(nested(900, "Hello"))
    apply(props, "append", None, nested(900, " World"))  # 900-deep props, then an append
    assert chain(props) == (900, "Hello World")
    lists = [[[["x"]]]] * 3
    assert copy_json(lists) == lists and copy_json(lists)[0] is not lists[0]
