"""A2A tasks that ask their caller, and the request handler that lets only the answer in.

A task whose reply ends ``input-required`` (see :mod:`agent_stream.gateway.a2a`) waits for its
caller's answer: :class:`Asking` remembers who made each task and which tasks wait, in which
envelope session. :class:`FollowUps` is a2a-sdk's ``DefaultRequestHandler`` checking a message
that names a ``taskId`` before the SDK starts anything: unknown or another caller's task,
``-32001`` (task not found: another caller's task is not theirs to learn of); another
``contextId`` than the task's, a finished task (a2a-sdk's own "terminal state" wording), a task
still working or answered already, ``-32602``. The answer claims the question, so a second one
is refused; the executor reads the claim (:data:`FOLLOW_UP_STATE`) and asks in that session.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["FOLLOW_UP_STATE", "KEY_STATE", "Asking", "Bounded", "FollowUps", "Waiting"]

KEY_STATE = "agent_stream_key"  # the caller's key (or address), for the per-key reply limit
FOLLOW_UP_STATE = "agent_stream_follow_up"  # the Waiting a checked follow-up answers
MAX_TASKS = 4096  # tasks per agent whose caller (and question, when asking) is remembered
K = TypeVar("K")
V = TypeVar("V")


class Bounded(Generic[K, V]):
    """A mapping keeping its ``limit`` most recently set entries.

    Args:
        limit: the most entries kept.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._items: OrderedDict[K, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K) -> V | None:
        """The value set for ``key`` (None: none, or forgotten).

        Args:
            key: the key.
        """
        return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        """Set ``key`` to ``value``, the least recently set entry forgotten past ``limit``.

        Args:
            key: the key.
            value: its value.
        """
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.limit:
            self._items.popitem(last=False)

    def pop(self, key: K) -> V | None:
        """Remove ``key``; its value (None: none).

        Args:
            key: the key.
        """
        return self._items.pop(key, None)


@dataclass(frozen=True)
class Waiting:
    """A task that ended input-required: who may answer it, and the session to answer in.

    Attributes:
        key: the caller who may answer (its API key, or its address when no keys are set).
        session: the envelope session the answer is asked in.
    """

    key: str
    session: uuid.UUID


@dataclass
class Asking:
    """Per agent: each task's caller, and the tasks waiting for their caller's answer.

    Attributes:
        owners: task id -> its caller's key.
        waiting: task id -> its Waiting, for the tasks waiting for an answer.
    """

    owners: Bounded[str, str] = field(default_factory=lambda: Bounded(MAX_TASKS))
    waiting: Bounded[str, Waiting] = field(default_factory=lambda: Bounded(MAX_TASKS))


def _handler_base() -> type:
    from a2a.server.request_handlers import DefaultRequestHandler

    base: type = DefaultRequestHandler
    return base


class FollowUps(_handler_base()):  # type: ignore[misc]
    """a2a-sdk's request handler, letting a message with a ``taskId`` through only when it
    answers that task's question (its caller's, the task ``input-required``).

    Args:
        executor: the agent's executor.
        task_store: a2a-sdk's task store.
        asking: the agent's tasks and their callers.
    """

    def __init__(self, executor: Any, task_store: Any, asking: Asking) -> None:
        super().__init__(agent_executor=executor, task_store=task_store)
        self.asking = asking

    async def on_message_send(self, params: Any, context: Any = None) -> Any:
        """``message/send``, once :meth:`check_follow_up` lets it through.

        Args:
            params: the request's params.
            context: a2a-sdk's server call context.
        """
        await self.check_follow_up(params, context)
        return await super().on_message_send(params, context)

    async def on_message_send_stream(self, params: Any, context: Any = None) -> AsyncIterator[Any]:
        """``message/stream``, once :meth:`check_follow_up` lets it through.

        Args:
            params: the request's params.
            context: a2a-sdk's server call context.
        """
        await self.check_follow_up(params, context)
        async for event in super().on_message_send_stream(params, context):
            yield event

    async def check_follow_up(self, params: Any, context: Any) -> None:
        """Refuse (a2a-sdk ``ServerError``) a ``taskId`` that is not a question to this caller;
        claim the question of one that is (a second answer to it is refused).

        Args:
            params: the request's params (its message).
            context: a2a-sdk's server call context (the caller's key).

        Raises:
            ServerError: the ``taskId`` is not this caller's task, names another context, or the
                task
                takes no answer now.
        """
        from a2a.types import InvalidParamsError, TaskNotFoundError, TaskState
        from a2a.utils.errors import ServerError

        message = params.message
        tid = message.task_id
        if not tid:  # check_message refused an empty one before
            return
        state = context.state if context is not None else {}
        key = str(state.get(KEY_STATE, "a2a"))
        task = await self.task_store.get(tid, context)
        waiting = self.asking.waiting.get(tid)
        owner = self.asking.owners.get(tid) or (waiting.key if waiting else None)
        if task is None or owner != key:  # another caller's task is not theirs to see
            raise ServerError(
                error=TaskNotFoundError(
                    message=f"Task {tid} not found: no task of yours has that id (a task is "
                    "kept a limited time); send the message without taskId to start one"
                )
            )
        if message.context_id is None:
            message.context_id = task.context_id
        elif message.context_id != task.context_id:
            raise ServerError(
                error=InvalidParamsError(
                    message=f"Invalid params: task {tid} belongs to contextId "
                    f"{task.context_id!r}, not {message.context_id!r}"
                )
            )
        now = task.status.state
        if now in (TaskState.completed, TaskState.canceled, TaskState.failed, TaskState.rejected):
            raise ServerError(
                error=InvalidParamsError(
                    message=f"Task {tid} is in terminal state: {now.value}; it takes no more "
                    "messages: send one without taskId (the same contextId keeps the "
                    "conversation)"
                )
            )
        if now != TaskState.input_required or waiting is None:
            why = "answered already" if now == TaskState.input_required else now.value
            raise ServerError(
                error=InvalidParamsError(
                    message=f"Task {tid} is {why}, not waiting for input: a message with its "
                    "taskId is taken only while the task is input-required"
                )
            )
        self.asking.waiting.pop(tid)
        state[FOLLOW_UP_STATE] = waiting
