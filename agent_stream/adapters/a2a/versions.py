"""The A2A codec's 0.3 events as A2A 1.0 (a2a-sdk's protobuf types), and back. Pure.

:class:`~agent_stream.adapters.a2a.A2AEncoder` writes the 0.3 shape (``kind``, ``final``,
lower-case states); an A2A 1.0 peer reads the same events as ``task`` / ``statusUpdate`` /
``artifactUpdate`` with ``TASK_STATE_*`` and ``ROLE_*`` and parts without ``kind``. The
mapping is a2a-sdk's own (``a2a.compat.v0_3.conversions``), so the two versions carry the same
ids, parts and ``metadata.agent_stream``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2a.compat.v0_3 import conversions
from a2a.compat.v0_3 import types as v03
from a2a.types import a2a_pb2 as v10
from google.protobuf.json_format import MessageToDict, ParseDict

__all__ = ["core_json", "stream_json", "to_core", "to_v03"]


# (the 0.3 model, its 1.0 message, 0.3 -> 1.0, 1.0 -> 0.3): a2a-sdk's own conversions
_PAIRS: tuple[tuple[type[Any], type[Any], Callable[[Any], Any], Callable[[Any], Any]], ...] = (
    (v03.Task, v10.Task, conversions.to_core_task, conversions.to_compat_task),
    (
        v03.TaskStatusUpdateEvent,
        v10.TaskStatusUpdateEvent,
        conversions.to_core_task_status_update_event,
        conversions.to_compat_task_status_update_event,
    ),
    (
        v03.TaskArtifactUpdateEvent,
        v10.TaskArtifactUpdateEvent,
        conversions.to_core_task_artifact_update_event,
        conversions.to_compat_task_artifact_update_event,
    ),
    (v03.Message, v10.Message, conversions.to_core_message, conversions.to_compat_message),
)


def to_core(event: Any) -> Any:
    """A 0.3 event (Task, status or artifact update, Message) as its 1.0 protobuf message.

    Args:
        event: an ``a2a.compat.v0_3.types`` event.
    """
    for old, _, convert, _ in _PAIRS:
        if isinstance(event, old):
            return convert(event)
    raise TypeError(f"not an A2A 0.3 event: {type(event).__name__}")


def to_v03(event: Any) -> Any:
    """A 1.0 protobuf event (Task, status or artifact update, Message) as its 0.3 model.

    Args:
        event: an ``a2a.types`` event.
    """
    for _, new, _, convert in _PAIRS:
        if isinstance(event, new):
            return convert(event)
    raise TypeError(f"not an A2A 1.0 event: {type(event).__name__}")


def stream_json(result: dict[str, Any]) -> Any:
    """A 1.0 ``StreamResponse`` JSON (``{"task": ...}``, ``{"statusUpdate": ...}``, ...) as
    the 0.3 model of the event it carries.

    Args:
        result: the JSON-RPC result of an A2A 1.0 stream event.

    Raises:
        ValueError: it is not one (protobuf's ParseError is a ValueError).
    """
    parsed = ParseDict(result, v10.StreamResponse())
    which = parsed.WhichOneof("payload")
    if which is None:
        raise ValueError("no task, message, statusUpdate or artifactUpdate")
    return to_v03(getattr(parsed, which))


def core_json(event: Any) -> dict[str, Any]:
    """A 0.3 event as the JSON an A2A 1.0 stream carries (``{"statusUpdate": {...}}``, ...).

    Args:
        event: an ``a2a.compat.v0_3.types`` event.
    """
    core = to_core(event)
    field = {
        v10.Task: "task",
        v10.TaskStatusUpdateEvent: "status_update",
        v10.TaskArtifactUpdateEvent: "artifact_update",
        v10.Message: "message",
    }[type(core)]
    out: dict[str, Any] = MessageToDict(v10.StreamResponse(**{field: core}))
    return out
