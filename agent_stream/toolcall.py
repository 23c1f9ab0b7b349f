"""Tool calls and progress lines written as scopes: the call, its progress and its result.

    async with b.tool("get_weather", {"city": "Paris"}) as t:
        await t.progress("Looking up Paris…")
        t.result({"temp": 21, "sky": "sunny"})

sends, in the scope it is opened on, a ``tool_call`` (``id``, ``name``, ``arguments`` as JSON),
a ``loading`` message for the progress (its text replaced by each later ``progress``, ``done``
when the body returns) and a ``tool_result`` (``call_id``, ``name``, ``content``) when the body
returns. When the body raises, the progress message ends with status ``error`` (``cancelled``
when cancelled), the result carries the failure (``is_error``: true) so a client waiting for it
is not left hanging, and the exception propagates. ``scope.progress(text)`` alone is the same
progress line without a call.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from agent_stream.errors import StreamError
from agent_stream.message import LOADING, tool_call, tool_result

if TYPE_CHECKING:
    from agent_stream.writer import MessageHandle, Scope

__all__ = ["Progress", "ToolCallScope"]

_UNSET: Any = object()


class Progress:
    """``async with scope.progress("Searching…") as p``: a ``loading`` message.

    :meth:`update` replaces its text; it is marked ``done`` when the body returns and ends with
    the body's status.

    Args:
        scope: the scope the message is written in.
        message: the progress line's first text.

    Raises:
        StreamError: ``message`` is not a string.
    """

    def __init__(self, scope: Scope, message: str) -> None:
        if not isinstance(message, str):
            raise StreamError(f"progress takes a string, got {type(message).__name__}")
        self._scope = scope
        self._first = message
        self._handle: MessageHandle | None = None

    @property
    def message_id(self) -> str | None:
        """The loading message's id (None until it started)."""
        return self._handle.message_id if self._handle is not None else None

    async def __aenter__(self) -> Progress:
        handle = self._scope.message(LOADING, {"message": self._first})
        await handle.__aenter__()
        self._handle = handle
        return self

    async def update(self, message: str) -> None:
        """Replace the progress line's text.

        Args:
            message: the new text.
        """
        if not isinstance(message, str):
            raise StreamError(f"progress takes a string, got {type(message).__name__}")
        if self._handle is None:
            raise StreamError("progress: update before the progress line started")
        await self._handle.replace(message, path="message")

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        handle = self._handle
        if handle is None:
            return
        if exc is None:
            await handle.merge({"done": True})
        await handle.__aexit__(et, exc, tb)


class ToolCallScope:
    """``async with scope.tool(name, arguments) as t``: see the module doc.

    ``status`` is completed | error | cancelled once the body ended.

    Args:
        scope: the scope the call is written in.
        name: the tool's name (not empty).
        arguments: its arguments: a mapping (sent as JSON), a JSON string, or None.
        call_id: the call's ``id``, also the result's ``call_id`` (None: a fresh ``call_…``).

    Raises:
        StreamError: an empty name or call_id, or arguments that are not JSON.
    """

    def __init__(
        self,
        scope: Scope,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        call_id: str | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise StreamError("tool: the name must be a non-empty string")
        if call_id is not None and (not isinstance(call_id, str) or not call_id):
            raise StreamError("tool: call_id must be a non-empty string")
        self._scope = scope
        self.name = name
        self.arguments = _arguments(arguments)
        self.call_id = call_id or "call_" + secrets.token_hex(8)
        self.status: str | None = None
        self._result: Any = _UNSET
        self._progress: Progress | None = None

    async def __aenter__(self) -> ToolCallScope:
        await self._scope.send(tool_call(id=self.call_id, name=self.name, arguments=self.arguments))
        return self

    async def progress(self, message: str) -> None:
        """Show (the first time) or update a progress line for this call.

        Args:
            message: the progress line's text.
        """
        if self._progress is None:
            progress = Progress(self._scope, message)
            await progress.__aenter__()
            self._progress = progress
        else:
            await self._progress.update(message)

    def result(self, content: Any) -> None:
        """The call's result, sent when the body returns.

        Args:
            content: a string or any JSON value.

        Raises:
            StreamError: ``content`` is not a JSON value.
        """
        try:
            json.dumps(content, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise StreamError(f"tool result must be a JSON value: {exc}") from None
        self._result = content

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            self.status = "completed"
        elif isinstance(exc, (asyncio.CancelledError, GeneratorExit)):
            self.status = "cancelled"
        else:
            self.status = "error"
        if self._progress is not None:
            await self._progress.__aexit__(et, exc, tb)
        if exc is None:
            content = None if self._result is _UNSET else self._result
            await self._scope.send(tool_result(self.call_id, self.name, content))
        else:
            why = (
                "cancelled"
                if self.status == "cancelled"
                else (f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            )
            await self._scope.send(tool_result(self.call_id, self.name, why, is_error=True))


def _arguments(arguments: Mapping[str, Any] | str | None) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    if not isinstance(arguments, Mapping):
        raise StreamError(
            f"tool: arguments are a mapping, a JSON string or None, got {type(arguments).__name__}"
        )
    try:
        return json.dumps(dict(arguments), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StreamError(f"tool: arguments must be JSON: {exc}") from None
