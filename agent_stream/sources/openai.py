"""A model source: any OpenAI-compatible chat-completions server, streamed into a StreamWriter.

    model = OpenAIModel(base_url="http://127.0.0.1:8000/v1", model="qwen3")
    async with StreamWriter(sink) as out:
        await model("What is the weather in Paris?", out)

The request goes through the official ``openai`` package (``AsyncOpenAI``,
``chat.completions.create(stream=True)``); the chunks are decoded by
``agent_stream.adapters.openai.OpenAIDecoder`` and written into the scope as messages of one
block (thinking, tool calls, text, refusal). HTTP errors, a connection cut mid-stream, malformed
chunks and timeouts end the open messages with status ``error`` and add an error Message the user
can read; whatever was streamed before stays.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_stream.adapters.openai import OpenAIDecoder
from agent_stream.conversation import Turn
from agent_stream.errors import StreamError, WireError, require
from agent_stream.message import ERROR, MESSAGE_END, MESSAGE_START, Message
from agent_stream.writer import BlockScope, MessageHandle, Scope, StreamWriter

__all__ = ["DEFAULT_MODEL", "ModelError", "ModelResult", "OpenAIModel"]

DEFAULT_MODEL = "gpt-4o-mini"
MODEL_ENV = "OPENAI_MODEL"


class ModelError(StreamError):
    """The model server failed (raised only with ``raise_errors=True``).

    Args:
        message: what failed.
        code: the server's error code (None: none).
    """

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class ModelResult:
    """How one call ended: finish_reason and usage as the server sent them, or the error.

    Attributes:
        finish_reason: the server's finish_reason (None: none came).
        usage: the server's token usage (None: none came).
        error: what failed (None: nothing).
        code: the failure's code (None: none).
    """

    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    error: str | None = None
    code: str | None = None


class _Feeder:
    """Turns the decoder's Messages into writer calls in one scope (ids are the writer's)."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.types: dict[str, str] = {}
        self.handles: dict[str, MessageHandle] = {}
        self.streamed = False

    async def put(self, msg: Message) -> None:
        name = msg.event
        mid = msg.message_id
        if name is not None:
            if name == MESSAGE_START and mid:
                t = msg.event_data.get("type")
                self.types[mid] = t if isinstance(t, str) else "text"
            elif name == MESSAGE_END and mid:
                h = self.handles.pop(mid, None)
                if h is not None:
                    status = msg.event_data.get("status")
                    await h.end(status if isinstance(status, str) else "completed")
            return
        self.streamed = True
        if msg.type == ERROR or not mid:
            await self.scope.send(msg.model_copy(update={"message_id": None, "chunk_id": None}))
            return
        h = self.handles.get(mid)
        if h is None:
            if not msg.delta:  # the first chunk is whole (a tool call): it opens the message
                h = self.scope.message(self.types.get(mid, msg.type), props=msg.props)
                self.handles[mid] = h
                await h.__aenter__()
                return
            h = self.scope.message(self.types.get(mid, msg.type))
            self.handles[mid] = h
            await h.__aenter__()
        props = msg.props or {}
        path = msg.delta_path
        if path is None:
            await h.append(props.get("content", ""))
        elif msg.delta_action == "append":
            await h.append(props.get(path, ""), path=path)
        else:
            await h.set(props.get(path), path)

    async def end_all(self, status: str) -> None:
        for h in list(self.handles.values()):
            with contextlib.suppress(StreamError):
                await h.end(status)
        self.handles.clear()


class OpenAIModel:
    """An async callable ``(question, out) -> None`` streaming a chat completion into ``out``.

    When ``out`` is the StreamWriter itself, a failure marks the stream failed
    (``StreamWriter.fail``)
    so it ends with status error.

    Args:
        base_url: the server's URL (None: OPENAI_BASE_URL, then the openai package's default).
        api_key: the API key (None: OPENAI_API_KEY, then ``"EMPTY"``, which local servers
            accept).
        model: the model's name (None: OPENAI_MODEL, then ``gpt-4o-mini``).
        system: a system message put before the conversation (None: none).
        timeout: seconds for connecting and for every wait for the next bytes.
        max_retries: the openai package's retry count for failed requests (before anything
            streamed).
        include_usage: ask the server for token usage (``stream_options``).
        block: write the reply as one block ``llm``.
        block_label: that block's label (None: the model's name).
        raise_errors: raise ModelError on a failure, after the error Message is written.
        client: an ``openai.AsyncOpenAI`` client to use (None: one per call, closed after).
        **params: passed to ``chat.completions.create`` as they are (temperature, tools, ...).

    Raises:
        MissingDependency: no ``client`` and the openai package is not installed.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        *,
        system: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        include_usage: bool = True,
        block: bool = True,
        block_label: str | None = None,
        raise_errors: bool = False,
        client: Any = None,
        **params: Any,
    ) -> None:
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.model = model or os.environ.get(MODEL_ENV) or DEFAULT_MODEL
        self.system = system
        self.timeout = timeout
        self.max_retries = max_retries
        self.include_usage = include_usage
        self.block = block
        self.block_label = block_label
        self.raise_errors = raise_errors
        self.params = params
        self._client = client
        if client is None:
            require("openai", "openai", "the openai model source")

    async def __call__(self, question: str, out: Scope, *, history: Sequence[Turn] = ()) -> None:
        """Ask ``question`` (after the conversation's earlier ``history``, sent as chat
        messages with their roles) and stream the reply into ``out``."""
        messages: list[dict[str, Any]] = []
        if self.system:
            messages.append({"role": "system", "content": self.system})
        messages.extend({"role": t.role, "content": t.text} for t in history)
        messages.append({"role": "user", "content": question})
        await self.stream(messages, out)

    async def stream(self, messages: Sequence[Mapping[str, Any]], out: Scope) -> ModelResult:
        """Stream the completion of a whole conversation into ``out``; returns how it ended.

        Args:
            messages: the whole conversation, OpenAI chat messages, sent as they are.
            out: the scope the reply is written into.

        Raises:
            ModelError: the server failed and ``raise_errors`` is set.
        """
        dec = OpenAIDecoder(stream_events=False)
        block: BlockScope | None = (
            out.block("llm", label=self.block_label or self.model) if self.block else None
        )
        scope: Scope = await block.__aenter__() if block is not None else out
        feeder = _Feeder(scope)
        result = ModelResult()
        try:
            failure = await self._run(messages, dec, feeder)
        except BaseException as exc:  # cancelled (or a bug in a sink): end what is open
            await feeder.end_all(
                "cancelled" if isinstance(exc, asyncio.CancelledError) else "error"
            )
            if block is not None:
                await block.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        if failure is not None:
            text, code = failure
            result.error, result.code = text, code
            for m in dec.fail(text, code):
                await feeder.put(m)
        for m in dec.close(done=False):
            await feeder.put(m)
        if dec.error is not None and result.error is None:  # cut: no finish_reason
            result.error, result.code = dec.error, "incomplete"
        await feeder.end_all("error" if result.error else "completed")
        result.finish_reason = dec.finish_reason
        result.usage = dec.usage
        if isinstance(out, StreamWriter):
            if dec.usage:
                out.usage = dict(dec.usage)
            if dec.finish_reason:
                out.finish_reason = dec.finish_reason
            if result.error:
                out.fail(result.error)
        err = ModelError(result.error, result.code) if result.error else None
        if block is not None:
            await block.__aexit__(type(err) if err else None, err, None)
        if err is not None and self.raise_errors:
            raise err
        return result

    async def _run(
        self, messages: Sequence[Mapping[str, Any]], dec: OpenAIDecoder, feeder: _Feeder
    ) -> tuple[str, str] | None:
        """Call the server and feed the chunks; returns (error text, code) on failure."""
        import openai

        owned = self._client is None
        client = self._client or openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self.api_key,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )
        where = str(client.base_url).rstrip("/")
        kwargs: dict[str, Any] = dict(self.params)
        if self.include_usage:
            kwargs.setdefault("stream_options", {"include_usage": True})
        try:
            stream: Any = await client.chat.completions.create(
                model=self.model,
                messages=list(messages),  # type: ignore[arg-type]
                stream=True,
                **kwargs,
            )
            try:
                async for chunk in stream:
                    for m in dec.feed(chunk.to_dict(warnings=False)):
                        await feeder.put(m)
            finally:
                with contextlib.suppress(Exception):
                    await stream.close()
        except openai.APITimeoutError:
            return (
                f"The model server at {where} did not answer within {self.timeout:g} s"
                + (" (the reply was cut off)" if feeder.streamed else ""),
                "timeout",
            )
        except openai.APIStatusError as exc:
            return (
                f"The model server at {where} answered HTTP {exc.status_code}" + _detail(exc.body),
                f"http_{exc.status_code}",
            )
        except openai.APIConnectionError:
            if feeder.streamed or dec.completion_id is not None:
                return (
                    f"The connection to the model server at {where} was lost mid-reply",
                    "connection_lost",
                )
            return f"Could not connect to the model server at {where}", "connection"
        except openai.APIError as exc:  # an error event inside the stream
            code = getattr(exc, "code", None)
            return (
                f"The model server reported an error: {exc.message}",
                str(code) if code else "model_error",
            )
        except (WireError, json.JSONDecodeError, ValueError) as exc:
            return f"The model server sent a malformed chunk: {exc}", "malformed_chunk"
        finally:
            if owned:
                with contextlib.suppress(Exception):
                    await client.close()
        return None


def _detail(body: Any) -> str:
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            msg = err.get("message")
            if isinstance(msg, str) and msg:
                return f": {msg}"
        elif isinstance(err, str) and err:
            return f": {err}"
    elif isinstance(body, str) and body.strip():
        return f": {body.strip()[:200]}"
    return ""
