"""How much memory a ChatMessage holds, estimated from above: what the decoder's caps
(``max_chat_bytes``, the reorder window's ``max_held_bytes``) count.

:func:`estimated_size` measures its strings and objects one by one; :func:`size_bound` is a
quicker bound from string lengths alone, never below it, so most ChatMessages are checked
against a cap without the exact estimate.
"""

from __future__ import annotations

import sys
from typing import Any

from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    MetadataContent,
    ResourceContent,
    TextContent,
)

from agent_stream.adapters.chat.wire import content_class

__all__ = ["estimated_size", "size_bound"]

# Measured with tracemalloc (uagents-core 0.4.12, pydantic v1 models), rounded up: a ChatMessage
# ~700 bytes, a content item 460-740 (a resource ~1,250), a dict entry ~100 plus its strings.
_CHAT_COST = 1024
_ITEM_COST = 1024
_RESOURCE_COST = 2048
_ENTRY_COST = 128
_STR_MOST = 80  # the most a str object adds to its characters' bytes (76, a UCS-4 one)


def _dict_size(d: Any) -> int:
    if type(d) is not dict:
        return 0
    getsize = sys.getsizeof
    return len(d) * _ENTRY_COST + sum(map(getsize, d)) + sum(map(getsize, d.values()))


def _item_size(item: Any, kind: type[Any] | None) -> int:
    if kind is TextContent:
        return _ITEM_COST + sys.getsizeof(item.text)
    if kind is MetadataContent:
        return _ITEM_COST + _dict_size(item.metadata)
    if kind is ResourceContent:
        resources = item.resource if isinstance(item.resource, list) else [item.resource]
        return sum(
            _RESOURCE_COST + sys.getsizeof(res.uri) + _dict_size(res.metadata) for res in resources
        )
    return _ITEM_COST


def estimated_size(chat: ChatMessage) -> int:
    """An upper estimate of the bytes a ChatMessage takes in memory (its strings and objects).

    Args:
        chat: the ChatMessage.
    """
    return _CHAT_COST + sum(_item_size(item, content_class(item)) for item in chat.content)


def size_bound(chat: ChatMessage) -> int:
    """A quick bound on :func:`estimated_size` (never below it), from string lengths alone: four
    bytes per character and the most a ``str`` object adds (``76 + 4 * len`` bytes at most).
    What it lets under a cap, the estimate does too: most ChatMessages need no more.

    Args:
        chat: the ChatMessage.
    """
    size = _CHAT_COST
    for item in chat.content:
        kind = content_class(item)
        try:
            if kind is TextContent:
                size += _ITEM_COST + _STR_MOST + 4 * len(item.text)
                continue
            if kind is MetadataContent:
                md = item.metadata
                chars = sum(map(len, md)) + sum(map(len, md.values()))
                size += _ITEM_COST + len(md) * (_ENTRY_COST + 2 * _STR_MOST) + 4 * chars
                continue
        except (TypeError, AttributeError):  # built without validation: measured the long way
            pass
        size += _item_size(item, kind)
    return size
