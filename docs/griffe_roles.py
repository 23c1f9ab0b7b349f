"""A griffe extension: Sphinx cross-reference roles in docstrings rendered as code.

The docstrings name other objects the Sphinx way (``:class:`~agent_stream.uagents.Reply```,
``:func:`protect```, ``:mod:`.edge```), which mkdocstrings would show as written, role and
backticks included. Each becomes an inline code span of the name as Sphinx displays it: the
last component after ``~``, the name without its leading dots otherwise.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):`(~?)([^`]+)`")


def plain(text: str) -> str:
    """``text`` with every Sphinx role written as an inline code span.

    Args:
        text: a docstring.

    Returns:
        The docstring, its roles replaced.
    """

    def one(m: re.Match[str]) -> str:
        short, target = m.group(1), m.group(2).strip()
        name = target.rsplit(".", 1)[-1] if short else target.lstrip(".")
        return f"`{name or target}`"

    return ROLE.sub(one, text)


class SphinxRoles(griffe.Extension):
    """Rewrites each loaded object's docstring with :func:`plain`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring, if it has one.

        Args:
            obj: the object griffe just loaded.
            **kwargs: the rest of the event's arguments (unused).
        """
        if obj.docstring is not None and ":`" in obj.docstring.value:
            obj.docstring.value = plain(obj.docstring.value)
