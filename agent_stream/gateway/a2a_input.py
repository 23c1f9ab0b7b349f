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
``-32000`` otherwise, nothing asked: the A2A route admits it before the SDK sees it). Both
versions' sends (A2A 1.0 and, through a2a-sdk's compatibility layer, 0.3) come through here.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from agent_stream.gateway.a2a_tasks import FINISHED_STATES, KEY_STATE, OwnedTaskStore
from agent_stream.recent import RecentMap

__all__ = ["FOLLOW_UP_STATE", "KEY_STATE", "TOO_MANY_TASKS", "Asking", "FollowUps", "Waiting"]

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
    answers that task's question (its caller's, the task ``input-required``).

    The 0.3 methods reach the same handler through a2a-sdk's compatibility layer.

    Args:
        executor: the agent's executor.
        task_store: the agent's task store.
        asking: the agent's tasks waiting for an answer.
        card: the agent's card.
    """

    task_store: OwnedTaskStore

    def __init__(
        self, executor: Any, task_store: OwnedTaskStore, asking: Asking, card: Any
    ) -> None:
        super().__init__(agent_executor=executor, task_store=task_store, agent_card=card)
        self.asking = asking

    async def on_message_send(self, params: Any, context: Any = None) -> Any:
        """``SendMessage`` (``message/send``), once :meth:`check_follow_up` lets it through.

        Args:
            params: the request's params.
            context: a2a-sdk's server call context.
        """
        try:
            await self.check_follow_up(params, context)
            return await super().on_message_send(params, context)
        finally:
            self.task_store.release(context)

    async def on_message_send_stream(self, params: Any, context: Any = None) -> AsyncIterator[Any]:
        """``SendStreamingMessage`` (``message/stream``), once :meth:`check_follow_up` lets it
        through.

        Args:
            params: the request's params.
            context: a2a-sdk's server call context.
        """
        try:
            await self.check_follow_up(params, context)
            async for event in super().on_message_send_stream(params, context):
                yield event
        finally:
            self.task_store.release(context)

    async def on_create_task_push_notification_config(self, params: Any, context: Any) -> Any:
        """Push notifications are not offered (the SDK's own check logs it as an error).

        Args:
            params: the request's parameters.
            context: the SDK's call context.
        """
        raise _no_push()

    # every push-notification method is refused the same way
    on_get_task_push_notification_config = on_create_task_push_notification_config
    on_list_task_push_notification_configs = on_create_task_push_notification_config
    on_delete_task_push_notification_config = on_create_task_push_notification_config

    async def check_follow_up(self, params: Any, context: Any) -> None:
        """Refuse (an a2a-sdk error) a ``taskId`` that is not a question to this caller; claim
        the question of one that is (a second answer to it is refused).

        Args:
            params: the request's params (its message).
            context: a2a-sdk's server call context (the caller's key).

        Raises:
            TaskNotFoundError: the ``taskId`` is not this caller's task.
            InvalidParamsError: it names another context, or the task takes no answer now.
        """
        from a2a.types import TaskState
        from a2a.utils.errors import InvalidParamsError, TaskNotFoundError

        message = params.message
        tid = message.task_id
        if not tid:  # a new task: the route gave it room (check_message refused an empty id)
            return
        state = context.state if context is not None else {}
        key = str(state.get(KEY_STATE, "a2a"))
        shown = _shown(tid)
        task = await self.task_store.get(tid, context)  # None: not this caller's
        waiting = self.asking.waiting.get(tid)
        if task is None:
            raise TaskNotFoundError(
                f"Task {shown} not found: no task of yours has that id (a finished "
                "task is kept a limited time); send the message without taskId to start one"
            )
        if not message.context_id:
            message.context_id = task.context_id
        elif message.context_id != task.context_id:
            raise InvalidParamsError(
                f"Invalid params: task {shown} belongs to contextId "
                f"{task.context_id!r}, not {_shown(message.context_id)!r}"
            )
        now = task.status.state
        name = _state(now)
        if now in FINISHED_STATES:
            raise InvalidParamsError(
                f"Task {shown} is in terminal state: {name}; it takes no more "
                "messages: send one without taskId (the same contextId keeps the "
                "conversation)"
            )
        if now != TaskState.TASK_STATE_INPUT_REQUIRED or waiting is None or waiting.key != key:
            why = "answered already" if now == TaskState.TASK_STATE_INPUT_REQUIRED else name
            raise InvalidParamsError(
                f"Task {shown} is {why}, not waiting for input: a message with its "
                "taskId is taken only while the task is input-required"
            )
        self.asking.waiting.pop(tid)
        state[FOLLOW_UP_STATE] = waiting


def _no_push() -> Exception:
    """The error of every push-notification method: the same whoever's task it names."""
    from a2a.utils.errors import PushNotificationNotSupportedError

    return PushNotificationNotSupportedError(
        "Push notifications are not supported by this agent: stream the task "
        "(SendStreamingMessage, SubscribeToTask) or poll it (GetTask)"
    )


def _state(value: int) -> str:
    """A task state as A2A 0.3 names it (``input-required``), which both versions' users read."""
    from a2a.types import TaskState

    name = str(TaskState.Name(value))
    return name.removeprefix("TASK_STATE_").lower().replace("_", "-")


def _shown(value: str, limit: int = 80) -> str:
    """``value`` as an error message shows it: a long one cut (the client sent it whole)."""
    return value if len(value) <= limit else value[:limit] + f"... ({len(value)} characters)"
