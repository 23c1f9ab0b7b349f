"""Dotted paths and the four delta actions, applied to plain JSON data.

Semantics (documented in docs/concepts/message-model.md, tested in tests/test_delta.py):

- A path is dotted: ``rows.1.temp``. A segment indexes a list when the value there is a list
  (it must then be a whole number inside the list), otherwise it is an object key.
- Missing intermediates are created as objects. Walking through a string, number, bool or null
  is an error; so is an index outside a list.
- ``append``: strings concatenate; a list is extended by a list, or gets a single value added;
  an object gets each key of an object value appended recursively (a missing key is set); a
  missing target is set; a number, bool or null target is replaced. A string onto a list or
  onto an object, a non-string onto a string, or a non-object onto an object, is an error.
- ``replace`` and ``set`` put the value at the path (``replace`` with no path replaces all props).
- ``merge`` is **shallow**: the object at the path gets the value's keys (the spec's rule); merge
  onto a non-object, or of a non-object, is an error. Target a nested object with ``delta_path``
  to merge deeper.

Every check runs before anything is written, so a failed delta leaves the data untouched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_stream.errors import DeltaError

if TYPE_CHECKING:
    from agent_stream.message import Message

_MISSING: Any = object()


def copy_json(v: Any) -> Any:
    """A deep copy of plain JSON data (strings and numbers are shared, being immutable).

    Iterative, so data of any depth is copied without recursion.

    Args:
        v: the JSON value (dicts, lists, strings, numbers, booleans, None).
    """
    if isinstance(v, dict):
        root: Any = {}
    elif isinstance(v, list):
        root = []
    else:
        return v
    stack: list[tuple[Any, Any]] = [(v, root)]
    while stack:
        src, dst = stack.pop()
        items = src.items() if isinstance(src, dict) else enumerate(src)
        is_list = isinstance(dst, list)
        for k, x in items:
            if isinstance(x, dict):
                c: Any = {}
                stack.append((x, c))
            elif isinstance(x, list):
                c = []
                stack.append((x, c))
            else:
                c = x
            if is_list:
                dst.append(c)
            else:
                dst[k] = c
    return root


def split_path(path: str) -> list[str]:
    """``"a.0.b"`` -> ``["a", "0", "b"]``.

    Args:
        path: a dotted path.

    Raises:
        DeltaError: the path has an empty segment.
    """
    segs = path.split(".")
    if any(s == "" for s in segs):
        raise DeltaError(f"delta_path {path!r} has an empty segment")
    return segs


def _index(seg: str, lst: list[Any], path: str) -> int:
    if not seg.isdigit():
        raise DeltaError(f"delta_path {path!r}: {seg!r} is not an index into a list")
    i = int(seg)
    if i >= len(lst):
        raise DeltaError(f"delta_path {path!r}: index {i} is past the end of a list of {len(lst)}")
    return i


def _kind(v: Any) -> str:
    if isinstance(v, str):
        return "a string"
    if isinstance(v, bool):
        return "a bool"
    if isinstance(v, (int, float)):
        return "a number"
    if v is None:
        return "null"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def read_path(root: Any, path: str) -> Any:
    """The value at ``path`` in ``root``.

    Args:
        root: the JSON value to read.
        path: a dotted path (list indices as numbers).

    Raises:
        DeltaError: nothing is at ``path``.
    """
    cur = root
    for seg in split_path(path):
        if isinstance(cur, dict):
            if seg not in cur:
                raise DeltaError(f"the chunk's props have nothing at delta_path {path!r}")
            cur = cur[seg]
        elif isinstance(cur, list):
            cur = cur[_index(seg, cur, path)]
        else:
            raise DeltaError(f"delta_path {path!r} goes through {_kind(cur)}")
    return cur


def _locate(root: dict[str, Any], segs: list[str], path: str) -> tuple[Any, Any, Any]:
    """(container, key, current value) for the last segment, without creating anything.

    When an intermediate is missing, the container is None and the current value _MISSING.
    """
    cur: Any = root
    for seg in segs[:-1]:
        if isinstance(cur, dict):
            if seg not in cur:
                return None, None, _MISSING
            cur = cur[seg]
        elif isinstance(cur, list):
            cur = cur[_index(seg, cur, path)]
        else:
            raise DeltaError(f"delta_path {path!r} goes through {_kind(cur)}")
    last = segs[-1]
    if isinstance(cur, dict):
        return cur, last, cur.get(last, _MISSING)
    if isinstance(cur, list):
        i = _index(last, cur, path)
        return cur, i, cur[i]
    raise DeltaError(f"delta_path {path!r} goes through {_kind(cur)}")


def _create(root: dict[str, Any], segs: list[str]) -> tuple[Any, Any]:
    cur: Any = root
    for seg in segs[:-1]:
        if isinstance(cur, list):
            cur = cur[int(seg)]
        else:
            nxt = cur.get(seg, _MISSING)
            if nxt is _MISSING:
                nxt = cur[seg] = {}
            cur = nxt
    last = segs[-1]
    return cur, (int(last) if isinstance(cur, list) else last)


def check_append(cur: Any, val: Any, where: str) -> None:
    """Check that ``val`` can be appended onto ``cur`` (iterative: any depth).

    Args:
        cur: the value appended onto.
        val: the value appended.
        where: the path of ``cur``, named in the error.

    Raises:
        DeltaError: the types do not append (a string onto a list...).
    """
    stack = [(cur, val, where)]
    while stack:
        cur, val, where = stack.pop()
        if cur is _MISSING or cur is None:
            continue
        if isinstance(cur, list):
            if isinstance(val, str):
                raise DeltaError(f"cannot append a string onto a list at {where}")
        elif isinstance(cur, str):
            if not isinstance(val, str):
                raise DeltaError(f"cannot append {_kind(val)} onto a string at {where}")
        elif isinstance(cur, dict):
            if not isinstance(val, dict):
                raise DeltaError(f"cannot append {_kind(val)} onto an object at {where}")
            for k, v in reversed(val.items()):
                stack.append((cur.get(k, _MISSING), v, f"{where}.{k}" if where != "props" else k))


def _append_one(cur: Any, val: Any) -> Any:
    """Append onto a target that is not an object (already checked)."""
    if cur is _MISSING or cur is None:
        return val
    if isinstance(cur, str):
        return cur + val
    if isinstance(cur, list):
        if isinstance(val, list):
            cur.extend(val)
        else:
            cur.append(val)
        return cur
    return val


def do_append(cur: Any, val: Any) -> Any:
    """Append (already checked); returns the new value (lists and objects change in place).

    Args:
        cur: the value appended onto.
        val: the value appended (strings concatenate, lists extend, objects append per key).
    """
    if not isinstance(cur, dict):
        return _append_one(cur, val)
    stack = [(cur, val)]
    while stack:
        c, v = stack.pop()
        for k, x in v.items():
            old = c.get(k, _MISSING)
            if isinstance(old, dict):
                stack.append((old, x))
            else:
                c[k] = _append_one(old, x)
    return cur


def apply(
    props: dict[str, Any], action: str, path: str | None, chunk_props: dict[str, Any]
) -> dict[str, Any]:
    """Apply one delta to ``props`` (changed in place when possible); returns the new props.

    Args:
        props: the message's props so far.
        action: ``append``, ``replace``, ``set`` or ``merge``.
        path: where, a dotted path (None: the props themselves).
        chunk_props: the chunk's props; the delta's value is what they hold at ``path`` (the
            whole of them when there is none).

    Raises:
        DeltaError: the delta cannot be applied; ``props`` is left unchanged.
    """
    if path is None:
        if action == "append":
            check_append(props, chunk_props, "props")
            do_append(props, copy_json(chunk_props))  # an object onto an object: in place
            return props
        if action in ("replace", "set"):
            whole: dict[str, Any] = copy_json(chunk_props)
            return whole
        if action == "merge":
            new = dict(props)
            new.update(copy_json(chunk_props))
            return new
        raise DeltaError(f"unknown delta_action {action!r}")
    val = copy_json(read_path(chunk_props, path))
    segs = split_path(path)
    container, key, cur = _locate(props, segs, path)
    if action == "append":
        check_append(cur, val, path)
        new_val = do_append(cur, val)
    elif action in ("replace", "set"):
        new_val = val
    elif action == "merge":
        if cur is not _MISSING and not isinstance(cur, dict):
            raise DeltaError(f"cannot merge into {_kind(cur)} at {path}")
        if not isinstance(val, dict):
            raise DeltaError(f"cannot merge {_kind(val)} (merge takes an object) at {path}")
        new_val = dict(cur) if cur is not _MISSING else {}
        new_val.update(val)
    else:
        raise DeltaError(f"unknown delta_action {action!r}")
    if container is None:
        container, key = _create(props, segs)
    container[key] = new_val
    return props


def set_path(props: dict[str, Any], path: str, value: Any) -> None:
    """Put ``value`` at ``path`` (creating missing objects).

    Args:
        props: the props to change, in place.
        path: a dotted path.
        value: the value to put there.
    """
    segs = split_path(path)
    container, key, _ = _locate(props, segs, path)
    if container is None:
        container, key = _create(props, segs)
    container[key] = value


def value_at(path: str, value: Any) -> dict[str, Any]:
    """Chunk props that carry ``value`` at ``path`` (``rows.1.temp`` pads the list with None).

    Args:
        path: a dotted path.
        value: the value to carry.
    """
    segs = split_path(path)
    out: Any = value
    for seg in reversed(segs):
        if seg.isdigit():
            lst: list[Any] = [None] * int(seg)
            lst.append(out)
            out = lst
        else:
            out = {seg: out}
    if not isinstance(out, dict):
        raise DeltaError(f"delta_path {path!r} must start with a key, not an index")
    return out


# -- what a chunk does to a message's one visible string --------------------------------------
APPEND = 1
SET = 2


def visible_change(msg: Message, field: str) -> tuple[int, str] | None:
    """(APPEND, s), (SET, s) or None: what the chunk ``msg`` does to the string at ``field``.

    The append-only wires show one string per message (``content``, a loading ``message``, a tool
    call's ``arguments``). A whole chunk sets it (to "" when absent); a type_change without props
    keeps it; an append (no path, or path == field) appends a string; replace/set at ``field``
    sets it; replace/set without a path replaces all props; merge without a path sets it when
    the value carries it. Anything else (other paths, non-string values) leaves it alone. Cheap:
    the common case (appending text) costs a dict lookup, and nothing is applied.

    Args:
        msg: the chunk.
        field: the props field holding the string (``content``, ``message``, ``arguments``).
    """
    props = msg.props
    if not msg.delta:
        if props is None and msg.type_change:
            return None
        v = props.get(field) if props else None
        return (SET, v if isinstance(v, str) else "")
    if props is None:
        return None
    path = msg.delta_path
    action = msg.delta_action or "append"
    v = props.get(field)
    if path is None:
        if action == "append":
            return (APPEND, v) if isinstance(v, str) else None
        if action == "merge":
            return (SET, v) if isinstance(v, str) else None
        return (SET, v if isinstance(v, str) else "")
    if path != field or not isinstance(v, str):
        return None
    if action == "append":
        return (APPEND, v)
    if action in ("replace", "set"):
        return (SET, v)
    return None
