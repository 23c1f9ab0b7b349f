"""``snapshot``: every attribute of the uagents modules agent_stream works with and of the classes
they define; ``changed``: which differ between two snapshots. test_per_agent.py checks that
importing agent_stream and protecting an agent change none, in its own process and in a fresh one
(which imports this module by path: it needs nothing but the standard library)."""

from __future__ import annotations

import sys
from typing import Any

MODULES = (
    "uagents.agent",
    "uagents.asgi",
    "uagents.communication",
    "uagents.dispatch",
    "uagents.context",
    "uagents.network",
    "uagents_core.identity",
)


def snapshot() -> dict[str, Any]:
    """Every attribute of the uagents modules above and of the classes they define."""
    out: dict[str, Any] = {}
    for name in MODULES:
        module = sys.modules.get(name) or __import__(name, fromlist=["_"])
        for key, value in vars(module).items():
            out[f"{name}.{key}"] = value
            if isinstance(value, type) and value.__module__ == name:
                for attr, member in vars(value).items():
                    out[f"{name}.{key}.{attr}"] = member
    return out


def changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return sorted(
        k
        for k in before.keys() | after.keys()
        if k not in before or k not in after or before[k] is not after[k]
    )
