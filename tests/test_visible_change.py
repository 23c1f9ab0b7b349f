"""delta.visible_change says what applying a chunk does to a message's shown string."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stream import merge as delta
from agent_stream.errors import DeltaError
from agent_stream.merge import APPEND, SET, visible_change
from agent_stream.message import Message


def test_the_common_shapes() -> None:
    base: dict[str, Any] = {"type": "text", "message_id": "M1"}
    assert visible_change(Message(props={"content": "a"}, **base), "content") == (SET, "a")
    assert visible_change(Message(**base), "content") == (SET, "")
    assert visible_change(Message(type_change=True, **base), "content") is None
    assert visible_change(Message(delta=True, props={"content": "b"}, **base), "content") == (
        APPEND,
        "b",
    )
    assert visible_change(
        Message(
            delta=True, delta_path="content", delta_action="set", props={"content": "c"}, **base
        ),
        "content",
    ) == (SET, "c")
    assert (
        visible_change(
            Message(delta=True, delta_path="meta", delta_action="set", props={"meta": 1}, **base),
            "content",
        )
        is None
    )
    assert (
        visible_change(Message(delta=True, delta_action="merge", props={"x": 1}, **base), "content")
        is None
    )


_value = st.one_of(st.text(alphabet="ab", max_size=3), st.integers(0, 3), st.none())


@settings(max_examples=300, deadline=None)
@given(
    props=st.one_of(
        st.none(), st.dictionaries(st.sampled_from(["content", "meta"]), _value, max_size=2)
    ),
    is_delta=st.booleans(),
    path=st.sampled_from([None, "content", "meta"]),
    action=st.sampled_from([None, "append", "replace", "merge", "set"]),
    type_change=st.booleans(),
)
def test_it_agrees_with_applying_the_delta(
    props: Any, is_delta: bool, path: Any, action: Any, type_change: bool
) -> None:
    before = {"content": "old", "meta": 0}
    msg = Message(
        type="text",
        message_id="M1",
        props=props,
        delta=is_delta,
        delta_path=path,
        delta_action=action,
        type_change=type_change,
    )
    if not is_delta:
        after = (props or {}) if (props is not None or not type_change) else before
    elif props is None:
        after = before
    else:
        try:
            after = delta.apply(delta.copy_json(before), action or "append", path, props)
        except DeltaError:
            return
    new = after.get("content", "")
    if not isinstance(new, str):
        return  # not a string: nothing a plain-text wire can show
    ch = visible_change(msg, "content")
    if ch is None:
        assert new == "old"
    elif ch[0] == APPEND:
        assert new == "old" + ch[1]
    else:
        assert new == ch[1]
