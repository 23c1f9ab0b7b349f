"""A2A tasks that ask their caller, and the request handler that lets only the answer in.

A task whose reply ends ``input-required`` (see :mod:`agent_stream.gateway.a2a`) waits for its
caller's answer: :class:`Asking` remembers which tasks wait, for whom, in which envelope session.
:class:`FollowUps` is a2a-sdk's ``DefaultRequestHandler`` checking a message that names a
``taskId`` before the SDK starts anything: unknown, forgotten or another caller's task,
``-32001`` (task not found: the task store hands a task to its own caller only, see
:mod:`agent_stream.gateway.a2a_tasks`); another
``contextId`` than the task's, a finished task (a2a-sdk's own "terminal state" wording), a task
still working or answered already, ``-32602``. The answer claims the question, so a second one
is refused; the executor reads the claim (:data:`FOLLOW_UP_STATE`) and asks in that session.
A message without ``taskId`` starts a task only when the task store has room for it (JSON-RPC
``-32000`` otherwise, nothing asked).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from agent_stream.gateway.a2a_tasks import KEY_STATE, OwnedTaskStore, TooManyTasks
from agent_stream.recent import RecentMap

__all__ = ["FOLLOW_UP_STATE", "KEY_STATE", "Asking", "FollowUps", "Waiting"]

FOLLOW_UP_STATE = "agent_stream_follow_up"  # the Waiting a checked follow-up answers
MAX_WAITING = 4096  # input-required tasks per agent whose question is remembered
TOO_MANY_TASKS = -32000  # JSON-RPC server error: no room for a new task


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
    """Per agent: the tasks waiting for their caller's answer.

    Attributes:
        waiting: task id -> its Waiting, for the tasks waiting for an answer.
    """

    waiting: RecentMap[str, Waiting] = field(default_factory=lambda: RecentMap(MAX_WAITING))


def _handler_base() -> type:
    from a2a.server.request_handlers import DefaultRequestHandler

    base: type = DefaultRequestHandler
    return base


class FollowUps(_handler_base()):  # type: ignore[misc]
    """a2a-sdk's request handler, letting a message with a ``taskId`` through only when it
    answers that task's question (its caller's, the task ``input-required``), and one without
    only when the task store has room for a new task.

    Args:
        executor: the agent's executor.
        task_store: the agent's task store.
        asking: the agent's tasks waiting for an answer.
    """

    task_store: OwnedTaskStore

    def __init__(self, executor: Any, task_store: OwnedTaskStore, asking: Asking) -> None:
        super().__init__(agent_executor=executor, task_store=task_store)
        self.asking = asking

    async def on_message_send(self, params: Any, context: Any = None) -> Any:
        """``message/send``, once :meth:`check_follow_up` lets it through.

        Args:
            params: the request's params.
            context: a2a-sdk's server call context.
        """
        await self.check_follow_up(params, context)
        try:
            return await super().on_message_send(params, context)
        finally:
            self.task_store.release(context)

    async def on_message_send_stream(self, params: Any, context: Any = None) -> AsyncIterator[Any]:
        """``message/stream``, once :meth:`check_follow_up` lets it through.

        Args:
            params: the request's params.
            context: a2a-sdk's server call context.
        """
        await self.check_follow_up(params, context)
        try:
            async for event in super().on_message_send_stream(params, context):
                yield event
        finally:
            self.task_store.release(context)

    async def check_follow_up(self, params: Any, context: Any) -> None:
        """Refuse (a2a-sdk ``ServerError``) a ``taskId`` that is not a question to this caller;
        claim the question of one that is (a second answer to it is refused). A message
        without ``taskId`` gets room for its new task, or is refused when there is none.

        Args:
            params: the request's params (its message).
            context: a2a-sdk's server call context (the caller's key).

        Raises:
            ServerError: the ``taskId`` is not this caller's task, names another context, or the
                task takes no answer now; or there is no room for a new task.
        """
        from a2a.types import InvalidParamsError, JSONRPCError, TaskNotFoundError, TaskState
        from a2a.utils.errors import ServerError

        message = params.message
        tid = message.task_id
        state = context.state if context is not None else {}
        if not tid:  # a new task (check_message refused an empty taskId before)
            if context is not None:
                try:
                    self.task_store.admit(context)
                except TooManyTasks as exc:
                    raise ServerError(
                        error=JSONRPCError(
                            code=TOO_MANY_TASKS,
                            message=str(exc),
                            data={"code": "too_many_tasks"},
                        )
                    ) from None
            return
        key = str(state.get(KEY_STATE, "a2a"))
        shown = _shown(tid)
        task = await self.task_store.get(tid, context)  # None: not this caller's
        waiting = self.asking.waiting.get(tid)
        if task is None:
            raise ServerError(
                error=TaskNotFoundError(
                    message=f"Task {shown} not found: no task of yours has that id (a finished "
                    "task is kept a limited time); send the message without taskId to start one"
                )
            )
        if message.context_id is None:
            message.context_id = task.context_id
        elif message.context_id != task.context_id:
            raise ServerError(
                error=InvalidParamsError(
                    message=f"Invalid params: task {shown} belongs to contextId "
                    f"{task.context_id!r}, not {_shown(message.context_id)!r}"
                )
            )
        now = task.status.state
        if now in (TaskState.completed, TaskState.canceled, TaskState.failed, TaskState.rejected):
            raise ServerError(
                error=InvalidParamsError(
                    message=f"Task {shown} is in terminal state: {now.value}; it takes no more "
                    "messages: send one without taskId (the same contextId keeps the "
                    "conversation)"
                )
            )
        if now != TaskState.input_required or waiting is None or waiting.key != key:
            why = "answered already" if now == TaskState.input_required else now.value
            raise ServerError(
                error=InvalidParamsError(
                    message=f"Task {shown} is {why}, not waiting for input: a message with its "
                    "taskId is taken only while the task is input-required"
                )
            )
        self.asking.waiting.pop(tid)
        state[FOLLOW_UP_STATE] = waiting


def _shown(value: str, limit: int = 80) -> str:
    """``value`` as an error message shows it: a long one cut (the client sent it whole)."""
    return value if len(value) <= limit else value[:limit] + f"... ({len(value)} characters)"
