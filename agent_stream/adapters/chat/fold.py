"""Folding: a message already complete when its ChatMessage is cut travels as one group.

Between agent_stream peers (an asker whose tag says ``fold=1``), the groups of one message that
sit next to each other in the ChatMessage being cut, from its message_start to its message_end,
become one group ``op`` ``fold``: the message's ids once and ``parts``, a JSON array in order,
each part either

- an object: one ``message`` group's fields (``type``, ``props`` and ``message_metadata`` as
  JSON values, ``delta``, ``delta_action``, ``delta_path``, ``type_change``), or
- a string: the type of a chat stream chunk (``text``, ``refusal``), whose text is the next
  TextContent after the group.

The decoder makes of it exactly the Messages the unfolded groups give, through the same checks
and counts. Nothing waits to be folded: only what is already in the ChatMessage folds; a message
whose groups are apart, carry items for plain peers, change type or end a stream midway goes as
it is.

Lean parts (to an asker that reads the lean wire): the group carries them as ``p`` instead of
``parts``, the JSON text with every ``"`` and ``'`` swapped (:func:`lean_parts`: a metadata value
is a string, so each ``"`` of the JSON would go escaped, two bytes; the swap is its own inverse),
and a part names only the ids the decoder cannot infer. An id a part leaves out is, for a
lifecycle event whose ``props.data`` holds it (message_start's ``message_id``...), that one,
else the previous part's (the first part's: the group's); a part that has none where the
inferred one has says ``""``. The encoder writes each part against the same inference
(:func:`infer_ids`), so the ids are exactly the unfolded groups'. There an event part whose
props are its event and data alone is ``{"e": event, "d": data}`` (no ``type``, no ``props``:
:func:`expand`).
"""

from __future__ import annotations

from typing import Any

from uagents_core.contrib.protocols.chat import (
    EndStreamContent,
    StartStreamContent,
    TextContent,
)

from agent_stream import jsontext
from agent_stream.adapters.chat.wire import (
    OP_CHUNK,
    OP_FOLD,
    OP_MESSAGE,
    PROTOCOL_VERSION,
    TAG_KEY,
    Group,
    content_class,
    dumps,
)

__all__ = [
    "FOLD_IDS",
    "JSON_FIELDS",
    "LEAN_PARTS_KEY",
    "MAX_FOLD_PARTS",
    "REL_KEY",
    "expand",
    "fold_groups",
    "infer_ids",
    "lean_parts",
    "read_parts",
    "relative_ids",
]

# The ids a folded group carries once, for all its parts.
FOLD_IDS = ("message_id", "thread_id", "block_id")
# Fields of a ``message`` group that hold JSON text: a part holds them as JSON values.
JSON_FIELDS = frozenset(("props", "message_metadata"))
# Parts one folded group may have (the decoder refuses more: a part is a Message out).
MAX_FOLD_PARTS = 4096
_SKIP = frozenset((TAG_KEY, "op", *FOLD_IDS))
# A folded group's parts as the lean wire carries them (see the module doc).
LEAN_PARTS_KEY = "p"
# Before ``p``, a lean folded group said ``rel=1`` beside its ``parts`` (ids relative, quotes
# escaped): still read, from responders of that time.
REL_KEY = "rel"
_SWAP_QUOTES = str.maketrans({'"': "'", "'": '"'})
_REL_JSON_FIELDS = JSON_FIELDS | {"d"}
_FOLDABLE_OPS = frozenset((OP_MESSAGE, OP_FOLD))


def fold_groups(groups: list[Group]) -> list[Group]:
    """The groups of a ChatMessage with each complete message's run folded into one group,
    and each run of groups carrying only metadata into one group whose parts carry their ids.

    Args:
        groups: the groups, in wire order.
    """
    out: list[Group] = []
    run: list[Group] = []  # metadata-only groups in a row, and their parts with ids
    run_parts: list[str] = []

    def close_run() -> None:
        if len(run) > 1:
            meta = {TAG_KEY: PROTOCOL_VERSION, "op": OP_FOLD, "parts": _array(run_parts)}
            out.append(Group(meta, []))
        else:
            out.extend(run)
        run.clear()
        run_parts.clear()

    i, n = 0, len(groups)
    while i < n:
        g = groups[i]
        if g.part == "start" and g.owner is not None:
            j = i + 1
            while j < n and groups[j].owner == g.owner and groups[j].part != "end":
                j += 1
            folded = _fold(groups[i : j + 1]) if j < n and groups[j].owner == g.owner else None
            if folded is not None:
                ids, parts, texts = folded
                group = _group(ids, parts, texts, g.owner)
                if texts:
                    close_run()
                    out.append(group)
                else:
                    run.append(group)
                    run_parts.extend(_part_of(p, ids) for p in parts)
                i = j + 1
                continue
        if not g.items and g.meta.get("op") == OP_MESSAGE:
            run.append(g)
            run_parts.append(_part(g.meta, _ids(g.meta)))
        else:
            close_run()
            out.append(g)
        i += 1
    close_run()
    return out


_Ids = list[tuple[str, str]]


def _ids(meta: dict[str, str]) -> _Ids:
    return [(k, meta[k]) for k in FOLD_IDS if k in meta]


def _array(parts: list[str]) -> str:
    return "[" + ",".join(parts) + "]"


def _group(ids: _Ids, parts: list[str], texts: list[Any], owner: Any) -> Group:
    meta = {TAG_KEY: PROTOCOL_VERSION, "op": OP_FOLD, **dict(ids)}
    meta["parts"] = _array(parts)
    return Group(meta, texts, owner=owner, needs_turn=bool(texts))


def _fold(run: list[Group]) -> tuple[_Ids, list[str], list[Any]] | None:
    """A message's run (start ... end) as (ids, parts, texts), or None when it does not fold
    exactly."""
    head = run[0].meta
    ids = [(k, head.get(k)) for k in FOLD_IDS]
    parts: list[str] = []
    texts: list[Any] = []
    stream_type: str | None = None
    last = len(run) - 1
    for i, g in enumerate(run):
        meta = g.meta
        op = meta.get("op")
        if op == OP_MESSAGE:
            if any(meta.get(k) != v for k, v in ids):
                return None
            items = g.items
            if items and not (
                i == last and len(items) == 1 and content_class(items[0]) is EndStreamContent
            ):
                return None  # a rendering for plain peers, or a stream ending midway
            parts.append(_part(meta, []))
        elif op == OP_CHUNK and 0 < i < last:
            items = g.items
            kind = meta.get("type")
            if g.opens:
                if (
                    kind is None
                    or len(items) != 2
                    or content_class(items[0]) is not StartStreamContent
                    or any(meta.get(k) != v for k, v in ids)
                ):
                    return None
                stream_type = kind
            elif stream_type is None or len(items) != 1:
                return None
            text = items[-1]
            if content_class(text) is not TextContent:
                return None
            parts.append(dumps(stream_type))
            texts.append(text)
        else:
            return None
    return [(k, v) for k, v in ids if v is not None], parts, texts


def _part(meta: dict[str, str], ids: _Ids) -> str:
    """A ``message`` group's fields (and ``ids``) as one JSON object (JSON text spliced in,
    not re-read)."""
    fields = [f"{dumps(k)}:{dumps(v)}" for k, v in ids]
    fields += [
        f"{dumps(k)}:{v if k in JSON_FIELDS else dumps(v)}"
        for k, v in meta.items()
        if k not in _SKIP
    ]
    return "{" + ",".join(fields) + "}"


def _part_of(part: str, ids: _Ids) -> str:
    """A folded message's object part with the message's ids added."""
    if not ids:
        return part
    head = ",".join(f"{dumps(k)}:{dumps(v)}" for k, v in ids)
    return "{" + head + ("," + part[1:] if part != "{}" else "}")


def infer_ids(part: dict[str, Any], previous: dict[str, str]) -> dict[str, str]:
    """The ids of a relative part (its own, else inferred: see the module doc).

    Args:
        part: the part (its id fields strings, ``""``: none).
        previous: the previous part's ids (the first part's: the group's).
    """
    props = part.get("props")
    data = props.get("data") if isinstance(props, dict) and "event" in props else None
    out: dict[str, str] = {}
    for k in FOLD_IDS:
        v = part.get(k)
        if v is None:
            v = data.get(k) if isinstance(data, dict) else None
            if not isinstance(v, str):
                v = previous.get(k)
        if v:
            out[k] = v
    return out


def lean_parts(text: str) -> str:
    """A folded group's parts as ``p`` carries them, from their JSON text, and back: every ``"``
    and ``'`` swapped (so the JSON's quotes need no escaping in the metadata's JSON).

    Args:
        text: the parts' JSON text (or a ``p`` value, to read it).
    """
    if "\0" in text:  # (never in JSON text: only a peer's p can hold one)
        return text.translate(_SWAP_QUOTES)
    return text.replace('"', "\0").replace("'", '"').replace("\0", "'")  # 1/20 of the time


def relative_ids(meta: dict[str, str]) -> None:
    """Make a folded group the lean wire's, in place: its parts' ids relative, carried as ``p``
    (:func:`lean_parts`); a group whose parts cannot be read back (JSON this reader refuses)
    stays as it is.

    Args:
        meta: the folded group's dict.
    """
    try:
        parts = jsontext.loads(meta["parts"])
    except (ValueError, TypeError):
        return
    group = {k: meta[k] for k in FOLD_IDS if k in meta}
    previous = group
    out: list[Any] = []
    for part in parts:
        if not isinstance(part, dict):
            out.append(part)
            continue
        actual = {**group, **{k: part[k] for k in FOLD_IDS if k in part}}
        rest = {k: v for k, v in part.items() if k not in FOLD_IDS}
        inferred = infer_ids(rest, previous)
        named = {k: actual.get(k, "") for k in FOLD_IDS if inferred.get(k) != actual.get(k)}
        out.append({**named, **_compact(rest)})
        previous = actual
    del meta["parts"]
    meta[LEAN_PARTS_KEY] = lean_parts(dumps(out))


def _compact(part: dict[str, Any]) -> dict[str, Any]:
    """An event part whose props are its event and data alone, as ``{"e":..., "d":...}`` (its
    other fields, e.g. ``extra``, after them)."""
    props = part.get("props")
    if (
        part.get("type") != "event"
        or not isinstance(props, dict)
        or list(props) not in (["event", "data"], ["event"])
        or not isinstance(props["event"], str)
        or "e" in part
        or "d" in part
    ):
        return part
    out: dict[str, Any] = {"e": props["event"]}
    if "data" in props:
        out["d"] = props["data"]
    out.update((k, v) for k, v in part.items() if k not in ("type", "props"))
    return out


def expand(part: dict[str, Any]) -> dict[str, Any]:
    """A relative part as the unfolded group's fields (``e``/``d``: an event and its data).

    Args:
        part: the part, as :func:`read_parts` checked it.
    """
    if "e" not in part:
        return part
    props: dict[str, Any] = {"event": part["e"]}
    if "d" in part:
        props["data"] = part["d"]
    out = {k: v for k, v in part.items() if k not in ("e", "d")}
    out["type"] = "event"
    out["props"] = props
    return out


def read_parts(raw: str | None, rel: bool = False) -> list[Any]:
    """A folded group's parts, checked for shape (raises ValueError on a bad one).

    Args:
        raw: the ``parts`` value.
        rel: the group's parts are relative (``e``/``d`` event parts allowed).
    """
    if raw is None:
        raise ValueError("no parts")
    parts = jsontext.loads(raw)  # InvalidJSON is a ValueError
    if not isinstance(parts, list) or not parts:
        raise ValueError("parts is not a non-empty JSON array")
    if len(parts) > MAX_FOLD_PARTS:
        raise ValueError(f"more than {MAX_FOLD_PARTS} parts")
    json_fields = _REL_JSON_FIELDS if rel else JSON_FIELDS
    for part in parts:
        if isinstance(part, dict):
            for k, v in part.items():
                if k not in json_fields and not isinstance(v, str):
                    raise ValueError(f"part field {k!r} is not a string")
            if rel and "d" in part and "e" not in part:
                raise ValueError("an event's data without its event")
            if rel and "e" in part and ("type" in part or "props" in part):
                raise ValueError("an event part with a type or props")
        elif not isinstance(part, str):
            raise ValueError("a part is neither an object nor a string")
    return parts
