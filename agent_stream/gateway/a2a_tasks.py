"""The A2A tasks the gateway keeps: whose each one is, and how many are kept.

a2a-sdk finds a task through its ``TaskStore`` for every method that names one
(``tasks/get``, ``tasks/cancel``, ``tasks/resubscribe``, the push-notification config methods, a
message's ``taskId``). :class:`OwnedTaskStore` is that store for one agent: it hands a task only
to the caller (API key, or client address without keys) whose message made it, so for anyone
else the SDK answers ``-32001`` (task not found), exactly as for an id that never existed.

:class:`TaskBook` holds the tasks of every agent, bounded: at most ``per_key`` tasks per caller
and ``total`` in all. A new task makes room by forgetting finished tasks (completed, failed,
canceled, rejected), least recently used first; a working or input-required task is never
forgotten, so when every kept task is one, the new task is refused (:class:`TooManyTasks`)
before anything is asked. A forgotten task is not found.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any

from a2a.types import TaskState

__all__ = [
    "FINISHED_STATES",
    "TICKET_STATE",
    "OwnedTaskStore",
    "TaskBook",
    "Ticket",
    "TooManyTasks",
    "caller",
]

TICKET_STATE = "agent_stream_ticket"  # the room a new task was given (see TaskBook.admit)
KEY_STATE = "agent_stream_key"  # the caller's key (or address), set by the call context
FINISHED = frozenset({"completed", "failed", "canceled", "rejected"})
FINISHED_STATES = frozenset(TaskState.Value(f"TASK_STATE_{s.upper()}") for s in FINISHED)
_Id = tuple[str, str]  # (the agent's scope, the task id)
LIST_PAGE = 50  # tasks in one ListTasks page when the caller names no page size


def caller(context: Any) -> str:
    """The caller a2a-sdk's call context speaks for (its key, else ``a2a``).

    Args:
        context: a2a-sdk's ``ServerCallContext`` (None: none).
    """
    state = getattr(context, "state", None) or {}
    return str(state.get(KEY_STATE, "a2a"))


class TooManyTasks(Exception):
    """No room for a new task: its caller's (or the gateway's) tasks are all still open."""


@dataclass
class Ticket:
    """Room given to one new task until its first save (or until its request ends).

    Attributes:
        key: the caller the room is counted against.
        open: whether the room is still held for a task not saved yet.
    """

    key: str
    open: bool = True


@dataclass
class _Kept:
    owner: str
    task: Any  # a2a.types.Task


def _finished(task: Any) -> bool:
    return task.status.state in FINISHED_STATES


class TaskBook:
    """Every agent's A2A tasks with their callers, least recently used first, bounded.

    Args:
        per_key: the most tasks kept per caller.
        total: the most tasks kept in all.
    """

    def __init__(self, per_key: int, total: int) -> None:
        self.per_key = per_key
        self.total = total
        self._tasks: OrderedDict[_Id, _Kept] = OrderedDict()
        self._mine: Counter[str] = Counter()  # tasks kept per caller
        self._held: Counter[str] = Counter()  # rooms given to tasks not saved yet, per caller

    def __len__(self) -> int:
        return len(self._tasks)

    def count(self, key: str) -> int:
        """How many tasks of ``key`` are kept.

        Args:
            key: the caller.
        """
        return self._mine[key]

    def admit(self, key: str) -> Ticket:
        """Room for one new task of ``key``, forgetting finished tasks if need be.

        Args:
            key: the caller.

        Raises:
            TooManyTasks: every task that would have to go is still working or waiting for input.
        """
        while self._mine[key] + self._held[key] >= self.per_key:
            if not self._forget_one(key):
                raise TooManyTasks(
                    f"you have {self.per_key} tasks open (working or input-required), the most "
                    "this gateway keeps per caller: finish or cancel one (tasks/cancel), then "
                    "send again"
                )
        while len(self._tasks) + sum(self._held.values()) >= self.total:
            if not self._forget_one(None):
                raise TooManyTasks(
                    f"the gateway has {self.total} tasks open (working or input-required), the "
                    "most it keeps: try again later"
                )
        self._held[key] += 1
        return Ticket(key)

    def release(self, ticket: Ticket) -> None:
        """Give back a ticket's room if its task was never saved.

        Args:
            ticket: the ticket.
        """
        if ticket.open:
            ticket.open = False
            self._held[ticket.key] -= 1
            if self._held[ticket.key] <= 0:
                del self._held[ticket.key]

    def get(self, scope: str, task_id: str, key: str) -> Any:
        """The task if ``key`` made it (None: unknown, forgotten, or another caller's).

        Args:
            scope: the agent's scope.
            task_id: the task's id.
            key: the caller asking.
        """
        kept = self._tasks.get((scope, task_id))
        if kept is None or kept.owner != key:
            return None
        self._tasks.move_to_end((scope, task_id))
        return kept.task

    def save(self, scope: str, task: Any, key: str, ticket: Ticket | None) -> None:
        """Keep ``task`` (a new one as ``key``'s, in its ticket's room).

        Args:
            scope: the agent's scope.
            task: the task.
            key: the caller saving it.
            ticket: the room given to it when it was admitted (None: none).
        """
        tid = (scope, str(task.id))
        kept = self._tasks.get(tid)
        if kept is not None:
            kept.task = task
            self._tasks.move_to_end(tid)
            return
        if ticket is not None and ticket.open and ticket.key == key:
            self.release(ticket)
            self._add(tid, key, task)
            return
        # saved again after it was forgotten (a finished task's last events): keep it, and
        # forget others to stay within the caps where that is possible
        self._add(tid, key, task)
        while self._mine[key] > self.per_key and self._forget_one(key, spare=tid):
            pass
        while len(self._tasks) > self.total and self._forget_one(None, spare=tid):
            pass

    def owned(self, scope: str, key: str) -> list[Any]:
        """The tasks ``key`` made of agent ``scope``, most recently used first.

        Args:
            scope: the agent's scope.
            key: the caller.
        """
        return [
            kept.task
            for (sc, _), kept in reversed(self._tasks.items())
            if sc == scope and kept.owner == key
        ]

    def delete(self, scope: str, task_id: str, key: str) -> None:
        """Forget the task, when ``key`` made it.

        Args:
            scope: the agent's scope.
            task_id: the task's id.
            key: the caller asking.
        """
        kept = self._tasks.get((scope, task_id))
        if kept is not None and kept.owner == key:
            self._drop((scope, task_id))

    def _add(self, tid: _Id, key: str, task: Any) -> None:
        self._tasks[tid] = _Kept(key, task)
        self._mine[key] += 1

    def _drop(self, tid: _Id) -> None:
        kept = self._tasks.pop(tid)
        self._mine[kept.owner] -= 1
        if self._mine[kept.owner] <= 0:
            del self._mine[kept.owner]

    def _forget_one(self, key: str | None, spare: _Id | None = None) -> bool:
        """Forget the least recently used finished task (of ``key``; None: anyone's)."""
        for tid, kept in self._tasks.items():
            if tid != spare and (key is None or kept.owner == key) and _finished(kept.task):
                self._drop(tid)
                return True
        return False


def _copy(task: Any) -> Any:
    """A copy of a protobuf task (None: None): the SDK changes the tasks it holds in place."""
    if task is None:
        return None
    copy = type(task)()
    copy.CopyFrom(task)
    return copy


def _store_base() -> type:
    from a2a.server.tasks import TaskStore

    base: type = TaskStore
    return base


class OwnedTaskStore(_store_base()):  # type: ignore[misc]
    """One agent's a2a-sdk ``TaskStore``: each task is its caller's alone, kept in a
    :class:`TaskBook` (shared by the gateway's agents, which bounds them all together).

    Args:
        book: where the tasks are kept.
        scope: the agent's name in the book (its tasks' ids are its own).
    """

    def __init__(self, book: TaskBook, scope: str) -> None:
        self.book = book
        self.scope = scope

    def admit(self, context: Any) -> None:
        """Give the caller's new task room (the first save takes it); see :meth:`TaskBook.admit`.

        Args:
            context: a2a-sdk's call context (the ticket goes in its state).

        Raises:
            TooManyTasks: there is no room.
        """
        ticket = self.book.admit(caller(context))
        context.state[TICKET_STATE] = ticket

    def release(self, context: Any) -> None:
        """Give back the room of a new task never saved (its request is over).

        Args:
            context: a2a-sdk's call context.
        """
        ticket = (getattr(context, "state", None) or {}).get(TICKET_STATE)
        if isinstance(ticket, Ticket):
            self.book.release(ticket)

    async def save(self, task: Any, context: Any = None) -> None:
        """Keep ``task`` as the caller's.

        Args:
            task: the task.
            context: a2a-sdk's call context (the caller).
        """
        ticket = (getattr(context, "state", None) or {}).get(TICKET_STATE)
        self.book.save(
            self.scope,
            _copy(task),
            caller(context),
            ticket if isinstance(ticket, Ticket) else None,
        )

    async def get(self, task_id: str, context: Any = None) -> Any:
        """A copy of the task, when the caller made it (None otherwise: a2a-sdk says not
        found).

        Args:
            task_id: the task's id.
            context: a2a-sdk's call context (the caller).
        """
        return _copy(self.book.get(self.scope, task_id, caller(context)))

    async def list(self, params: Any, context: Any = None) -> Any:
        """``ListTasks``: the caller's tasks of this agent (of one context, or in one state,
        when ``params`` says so), most recently used first, one page.

        Args:
            params: a2a-sdk's ``ListTasksRequest``.
            context: a2a-sdk's call context (the caller).
        """
        from a2a.types import ListTasksResponse
        from a2a.utils.errors import InvalidParamsError

        token = params.page_token
        if token and not (token.isdigit() and len(token) <= 9):
            raise InvalidParamsError("Invalid params: pageToken is not one this agent gave")
        mine = self.book.owned(self.scope, caller(context))
        if params.context_id:
            mine = [t for t in mine if t.context_id == params.context_id]
        if params.status:
            mine = [t for t in mine if t.status.state == params.status]
        size = params.page_size if params.HasField("page_size") else LIST_PAGE
        start = int(token) if token else 0
        page = mine[start : start + size]
        more = start + size < len(mine)
        return ListTasksResponse(
            tasks=[_copy(t) for t in page],
            next_page_token=str(start + size) if more else "",
            page_size=len(page),
            total_size=len(mine),
        )

    async def delete(self, task_id: str, context: Any = None) -> None:
        """Forget the task, when the caller made it.

        Args:
            task_id: the task's id.
            context: a2a-sdk's call context (the caller).
        """
        self.book.delete(self.scope, task_id, caller(context))
