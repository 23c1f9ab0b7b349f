"""A chat model's JSON body, byte for byte as uagents writes it, without pydantic v1's walk.

uagents sends a model as ``model.json()``: pydantic v1 turns it into a dict field by field (every
value through its generic ``_get_value``), then ``json.dumps`` with its encoder for datetimes and
UUIDs. For a streaming agent that is most of what sending one ChatMessage costs after signing. The
chat protocol's models are flat (strings, string dicts, UUIDs, a datetime), so :func:`chat_json`
lays them out directly in the models' field order, the same ``json.dumps`` call writing the same
bytes; any value of another shape falls back to ``model.json()``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from uuid import UUID

from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    EndSessionContent,
    EndStreamContent,
    MetadataContent,
    StartSessionContent,
    StartStreamContent,
    TextContent,
)
from uagents_core.models import Model

__all__ = ["chat_from_json", "chat_json"]

# The flat models and their fields, in declaration order (what ``.dict()`` walks).
_FIELDS: dict[type, tuple[str, ...]] = {
    m: tuple(m.__fields__)
    for m in (
        TextContent,
        MetadataContent,
        StartSessionContent,
        EndSessionContent,
        StartStreamContent,
        EndStreamContent,
    )
}
_ACK_FIELDS = tuple(ChatAcknowledgement.__fields__)
_CHAT_FIELDS = tuple(ChatMessage.__fields__)


class _Unusual(Exception):
    """A value this module does not lay out itself."""


def _value(v: Any) -> Any:
    t = type(v)
    if t is str or v is None:
        return v
    if t is UUID:
        return str(v)
    if t is dict and all(type(k) is str and type(x) is str for k, x in v.items()):
        return dict(v)
    raise _Unusual


def _item(item: Any) -> dict[str, Any]:
    fields = _FIELDS.get(type(item))
    if fields is None:
        raise _Unusual
    d = item.__dict__
    return {k: _value(d[k]) for k in fields}


def _timestamp(v: Any) -> str:
    if type(v) is not datetime:
        raise _Unusual
    return v.isoformat()


# The last JSON written with ``keep``: (the model, its JSON). A reply's pump writes a ChatMessage's
# JSON for its replay buffer just before sending it, and the send writes it again.
_kept: tuple[Model, str] | None = None


def chat_json(model: Model, *, keep: bool = False) -> str:
    """``model.json()`` for the chat protocol's models, faster; any other model: ``.json()``.

    Args:
        model: the model to send.
        keep: remember this JSON for the next call with the very same model (a ChatMessage
            about to be sent, never changed afterwards): that call returns it as it is.
    """
    global _kept
    kept = _kept
    if kept is not None and kept[0] is model:
        return kept[1]
    text = _write(model)
    if keep:
        _kept = (model, text)
    return text


def _write(model: Model) -> str:
    try:
        t = type(model)
        d = model.__dict__
        if t is ChatMessage:
            if tuple(d) != _CHAT_FIELDS:
                raise _Unusual
            out: dict[str, Any] = {
                "timestamp": _timestamp(d["timestamp"]),
                "msg_id": _value(d["msg_id"]),
                "content": [_item(i) for i in d["content"]],
            }
        elif t is ChatAcknowledgement:
            if tuple(d) != _ACK_FIELDS:
                raise _Unusual
            out = {
                "timestamp": _timestamp(d["timestamp"]),
                "acknowledged_msg_id": _value(d["acknowledged_msg_id"]),
                "metadata": _value(d["metadata"]),
            }
        else:
            raise _Unusual
    except (_Unusual, KeyError, TypeError):
        return str(model.json())
    return json.dumps(out)


def chat_from_json(text: str) -> ChatMessage:
    """The ChatMessage whose :func:`chat_json` is ``text`` (a kept one, sent again).

    A reply's sent ChatMessages are kept as their JSON for repair requests: a ChatMessage
    as pydantic v1 objects (a model, a ``__dict__`` and a ``__fields_set__`` per content item)
    takes about five times the memory of its JSON, and a thousand replies keep ~10 each.

    Args:
        text: the JSON :func:`chat_json` wrote.
    """
    return ChatMessage.parse_raw(text)
