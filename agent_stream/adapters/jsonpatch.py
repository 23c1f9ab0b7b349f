"""RFC 6902 JSON Patch for a structured delta, built against what the client holds.

``add`` where the path is missing (intermediate objects included), ``replace`` only where it
exists, ``add .../-`` to extend lists; used by the AG-UI encoder's ``ACTIVITY_DELTA``.
"""

from __future__ import annotations

from typing import Any

from agent_stream import merge

__all__ = ["json_patch"]


def _ptr(segs: list[str]) -> str:
    return "".join("/" + s.replace("~", "~0").replace("/", "~1") for s in segs)


def _nest(segs: list[str], value: Any) -> Any:
    for s in reversed(segs):
        value = {s: value}
    return value


def _append_ops(segs: list[str], cur: Any, val: Any, ops: list[dict[str, Any]]) -> None:
    where = _ptr(segs)
    if isinstance(cur, str):
        if isinstance(val, str):  # (else the delta cannot apply; apply() says why)
            ops.append({"op": "replace", "path": where, "value": cur + val})
    elif isinstance(cur, list):
        for item in val if isinstance(val, list) else [val]:
            ops.append({"op": "add", "path": where + "/-", "value": merge.copy_json(item)})
    elif isinstance(cur, dict):
        for k, v in val.items() if isinstance(val, dict) else ():
            if k in cur and cur[k] is not None:
                _append_ops([*segs, k], cur[k], v, ops)
            else:
                ops.append({"op": "add", "path": _ptr([*segs, k]), "value": merge.copy_json(v)})
    else:  # null, number or bool: replaced
        ops.append({"op": "replace", "path": where, "value": merge.copy_json(val)})


def json_patch(
    props: dict[str, Any], action: str, path: str | None, chunk_props: dict[str, Any]
) -> list[dict[str, Any]] | None:
    """The RFC 6902 patch that turns ``props`` into what the delta makes of it.

    Call it before applying the delta; it does not check that the delta applies
    (``agent_stream.merge.apply`` does).

    Args:
        props: the message's props before the delta.
        action: the delta's action (``append``, ``replace``, ``set``, ``merge``).
        path: the delta's path (None: the props themselves).
        chunk_props: the delta chunk's props.

    Returns:
        The patch's operations; None means "send a snapshot" (all props replaced).
    """
    ops: list[dict[str, Any]] = []
    if path is None:
        if action in ("replace", "set"):
            return None
        if action == "merge":
            for k, v in chunk_props.items():
                ops.append(
                    {
                        "op": "replace" if k in props else "add",
                        "path": _ptr([k]),
                        "value": merge.copy_json(v),
                    }
                )
            return ops
        _append_ops([], props, chunk_props, ops)
        return ops
    segs = merge.split_path(path)
    val = merge.read_path(chunk_props, path)
    cur: Any = props
    for i, seg in enumerate(segs):
        if isinstance(cur, dict):
            if seg not in cur:
                if action == "merge" and not isinstance(val, dict):
                    return ops
                ops.append(
                    {
                        "op": "add",
                        "path": _ptr(segs[: i + 1]),
                        "value": _nest(segs[i + 1 :], merge.copy_json(val)),
                    }
                )
                return ops
            cur = cur[seg]
        elif isinstance(cur, list) and seg.isdigit() and int(seg) < len(cur):
            cur = cur[int(seg)]
        else:
            return ops  # the delta cannot apply; apply() says why
    if action == "append":
        if cur is None:
            ops.append({"op": "replace", "path": _ptr(segs), "value": merge.copy_json(val)})
        else:
            _append_ops(segs, cur, val, ops)
    elif action == "merge":
        if isinstance(cur, dict) and isinstance(val, dict):
            for k, v in val.items():
                ops.append(
                    {
                        "op": "replace" if k in cur else "add",
                        "path": _ptr([*segs, k]),
                        "value": merge.copy_json(v),
                    }
                )
    else:
        ops.append({"op": "replace", "path": _ptr(segs), "value": merge.copy_json(val)})
    return ops
