"""The Message DSL: one chunk of a hierarchical agent stream, its built-in types and events.

A ``Message`` is the only currency between agent_stream's layers. JSON in and out follows the
spec exactly: empty fields are omitted, custom types are plain strings, unknown top-level keys are
rejected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from agent_stream import jsontext
from agent_stream.errors import InvalidMessage

DeltaAction = Literal["append", "replace", "merge", "set"]
DELTA_ACTIONS: frozenset[str] = frozenset(("append", "replace", "merge", "set"))
# How a stream, thread or block ended; "lost": the agent answering stopped before it ended (an
# asker's idle timeout, or a fleet replica ending a dead replica's reply for its asker).
Status = Literal["completed", "error", "cancelled", "lost"]

# Built-in type names.
TEXT = "text"
THINKING = "thinking"
LOADING = "loading"
TOOL_CALL = "tool_call"
TOOL_RESULT = "tool_result"
ERROR = "error"
IMAGE = "image"
AUDIO = "audio"
VIDEO = "video"
ACTION = "action"
EVENT = "event"
USER_INPUT = "user_input"
REFUSAL = "refusal"
CARD = "card"
# The kinds of interactive cards (the chat protocol's cards: uagents-core's card kinds).
CARD_KINDS = ("carousel", "detail", "form", "review", "custom")
BUILTIN_TYPES = frozenset(
    (
        TEXT,
        THINKING,
        LOADING,
        TOOL_CALL,
        TOOL_RESULT,
        ERROR,
        IMAGE,
        AUDIO,
        VIDEO,
        ACTION,
        EVENT,
        USER_INPUT,
        CARD,
    )
)

# Lifecycle event names (props.event of a Message of type "event").
STREAM_START = "stream_start"
STREAM_END = "stream_end"
THREAD_START = "thread_start"
THREAD_END = "thread_end"
BLOCK_START = "block_start"
BLOCK_END = "block_end"
MESSAGE_START = "message_start"
MESSAGE_END = "message_end"
LIFECYCLE_EVENTS = frozenset(
    (
        STREAM_START,
        STREAM_END,
        THREAD_START,
        THREAD_END,
        BLOCK_START,
        BLOCK_END,
        MESSAGE_START,
        MESSAGE_END,
    )
)

_STRICT = ConfigDict(extra="forbid")


class Metadata(BaseModel):
    """Optional per-chunk metadata: Unix-ns timestamp, sequence number, trace id."""

    model_config = _STRICT

    timestamp: int | None = None
    sequence: int | None = None
    trace_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, absent fields left out."""
        return {
            k: v
            for k, v in (
                ("timestamp", self.timestamp),
                ("sequence", self.sequence),
                ("trace_id", self.trace_id),
            )
            if v is not None
        }


class Message(BaseModel):
    """One chunk of the stream (spec 002). Fields left empty are omitted from JSON."""

    model_config = _STRICT

    type: str = Field(min_length=1)
    props: dict[str, Any] | None = None
    chunk_id: str | None = None
    message_id: str | None = None
    block_id: str | None = None
    thread_id: str | None = None
    delta: bool = False
    delta_path: str | None = None
    delta_action: DeltaAction | None = None
    type_change: bool = False
    metadata: Metadata | None = None

    # -- JSON -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON object: keys in spec order, empty fields left out."""
        d: dict[str, Any] = {"type": self.type}
        if self.props:
            d["props"] = self.props
        if self.chunk_id:
            d["chunk_id"] = self.chunk_id
        if self.message_id:
            d["message_id"] = self.message_id
        if self.block_id:
            d["block_id"] = self.block_id
        if self.thread_id:
            d["thread_id"] = self.thread_id
        if self.delta:
            d["delta"] = True
        if self.delta_path:
            d["delta_path"] = self.delta_path
        if self.delta_action:
            d["delta_action"] = self.delta_action
        if self.type_change:
            d["type_change"] = True
        if self.metadata is not None:
            md = self.metadata.to_dict()
            if md:
                d["metadata"] = md
        return d

    def to_json(self) -> str:
        """Compact JSON, UTF-8 characters kept as they are."""
        return jsontext.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: Any) -> Message:
        """Validate a decoded JSON object.

        Strict: a field of the wrong JSON type is an error, never coerced (``"delta": 1``).

        Args:
            data: the decoded JSON value (anything but an object is an error).

        Raises:
            InvalidMessage: it is not a valid Message; the error says what is wrong.
        """
        if not isinstance(data, Mapping):
            raise InvalidMessage(f"a Message must be a JSON object, got {type(data).__name__}")
        try:
            return cls.model_validate(data, strict=True)
        except ValidationError as exc:
            raise InvalidMessage(_explain(exc)) from None

    @classmethod
    def from_json(cls, text: str | bytes) -> Message:
        """Parse one Message from strict JSON text (``agent_stream.jsontext``).

        Args:
            text: the JSON text, as a string or UTF-8 bytes.

        Raises:
            InvalidMessage: bad JSON (nesting, NaN, huge numbers, lone surrogates) or fields.
        """
        return cls.from_dict(jsontext.loads(text, InvalidMessage))

    # -- convenience --------------------------------------------------------------------------
    @property
    def event(self) -> str | None:
        """The event name when this is an event Message, else None."""
        if self.type != EVENT or not self.props:
            return None
        name = self.props.get("event")
        return name if isinstance(name, str) else None

    @property
    def event_data(self) -> dict[str, Any]:
        """The event's data object (empty when absent)."""
        data = (self.props or {}).get("data")
        return data if isinstance(data, dict) else {}

    @property
    def is_lifecycle(self) -> bool:
        return self.event in LIFECYCLE_EVENTS

    def ids(self) -> dict[str, str]:
        """The message_id, thread_id and block_id that are set, by name."""
        d: dict[str, str] = {}
        if self.message_id:
            d["message_id"] = self.message_id
        if self.thread_id:
            d["thread_id"] = self.thread_id
        if self.block_id:
            d["block_id"] = self.block_id
        return d


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "message"
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown field {loc!r}")
        elif err["type"] == "missing":
            parts.append(f"missing field {loc!r}")
        else:
            parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


# -- built-in props ---------------------------------------------------------------------------
class _Props(BaseModel):
    model_config = ConfigDict(extra="allow")

    def to_props(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class TextProps(_Props):
    """The props of ``text`` Messages."""

    content: str = ""


class ThinkingProps(_Props):
    """The props of ``thinking`` Messages."""

    content: str = ""


class LoadingProps(_Props):
    """The props of ``loading`` Messages."""

    message: str = ""
    done: bool | None = None


class ToolCallProps(_Props):
    """The props of ``tool_call`` Messages."""

    id: str | None = None
    name: str | None = None
    arguments: str = ""


class ToolResultProps(_Props):
    """The props of ``tool_result`` Messages."""

    call_id: str | None = None
    name: str | None = None
    content: Any = None
    is_error: bool | None = None


class ErrorProps(_Props):
    """The props of ``error`` Messages."""

    message: str
    code: str | None = None
    details: Any = None


class ImageProps(_Props):
    """The props of ``image`` Messages."""

    url: str
    alt: str | None = None
    width: int | None = None
    height: int | None = None
    detail: str | None = None


class AudioProps(_Props):
    """The props of ``audio`` Messages."""

    url: str
    format: str | None = None
    duration: float | None = None
    transcript: str | None = None
    autoplay: bool | None = None
    controls: bool | None = None


class VideoProps(_Props):
    """The props of ``video`` Messages."""

    url: str
    format: str | None = None
    duration: float | None = None
    thumbnail: str | None = None
    width: int | None = None
    height: int | None = None
    autoplay: bool | None = None
    controls: bool | None = None
    loop: bool | None = None


class ActionProps(_Props):
    """The props of ``action`` Messages."""

    name: str
    payload: Any = None


class EventProps(_Props):
    """The props of ``event`` Messages."""

    event: str
    message: str | None = None
    data: dict[str, Any] | None = None


class UserInputProps(_Props):
    """The props of ``user_input`` Messages."""

    content: str
    role: str | None = None
    name: str | None = None


class CardProps(_Props):
    """The props of ``card`` Messages: an interactive card (the chat protocol's cards), shown
    to a person and answered with a choice or a form's values.

    ``kind`` is one of :data:`CARD_KINDS`; ``payload`` is the card's payload as uagents-core's
    card models define it for that kind (checked where it goes on or comes off the chat wire);
    ``card_id`` names it for the answer; ``terminal``: no answer is expected.
    """

    kind: Literal["carousel", "detail", "form", "review", "custom"]
    payload: dict[str, Any]
    card_id: str | None = None
    terminal: bool | None = None


class RefusalProps(_Props):
    """The props of ``refusal`` Messages."""

    content: str = ""


PROPS_MODELS: dict[str, type[_Props]] = {
    TEXT: TextProps,
    THINKING: ThinkingProps,
    LOADING: LoadingProps,
    TOOL_CALL: ToolCallProps,
    TOOL_RESULT: ToolResultProps,
    ERROR: ErrorProps,
    IMAGE: ImageProps,
    AUDIO: AudioProps,
    VIDEO: VideoProps,
    ACTION: ActionProps,
    EVENT: EventProps,
    USER_INPUT: UserInputProps,
    REFUSAL: RefusalProps,
    CARD: CardProps,
}


def typed_props(msg: Message) -> _Props | None:
    """The props of a built-in type as its model (None for custom types).

    Args:
        msg: the Message.

    Raises:
        InvalidMessage: the props do not fit the type's model.
    """
    model = PROPS_MODELS.get(msg.type)
    if model is None:
        return None
    try:
        return model.model_validate(msg.props or {})
    except ValidationError as exc:
        raise InvalidMessage(f"{msg.type} props: {_explain(exc)}") from None


# -- constructors -----------------------------------------------------------------------------
def _msg(type_: str, props: _Props, ids: Mapping[str, Any]) -> Message:
    return Message(type=type_, props=props.to_props(), **ids)


def text(content: str, **ids: Any) -> Message:
    """A whole text message.

    Args:
        content: the text.
        **ids: Message ids (``message_id``, ``block_id``, ``thread_id``...).
    """
    return _msg(TEXT, TextProps(content=content), ids)


def thinking(content: str, **ids: Any) -> Message:
    """Model reasoning.

    Args:
        content: the reasoning text.
        **ids: Message ids (``message_id``, ``block_id``, ``thread_id``...).
    """
    return _msg(THINKING, ThinkingProps(content=content), ids)


def loading(message: str, done: bool | None = None, **ids: Any) -> Message:
    """A progress indicator.

    Args:
        message: what is in progress.
        done: True once it is over (None: not said).
        **ids: Message ids (``message_id``, ``block_id``, ``thread_id``...).
    """
    return _msg(LOADING, LoadingProps(message=message, done=done), ids)


def progress(message: str, done: bool | None = None, **ids: Any) -> Message:
    """A progress line: a ``loading`` message.

    ``scope.progress(message)`` writes one, updates it and marks it done for you.

    Args:
        message: the work in progress.
        done: True once the work it names is over (None: not said).
        **ids: Message ids (``message_id``, ``block_id``, ``thread_id``...).
    """
    return loading(message, done, **ids)


def tool_call(id: str | None, name: str | None, arguments: str = "", **ids: Any) -> Message:
    """A function/tool call.

    Args:
        id: the call's id, which its ``tool_result`` names.
        name: the tool's name.
        arguments: the arguments, as a JSON string (or a part of one in a delta).
        **ids: Message ids (``message_id``, ``block_id``, ``thread_id``...).
    """
    return _msg(TOOL_CALL, ToolCallProps(id=id, name=name, arguments=arguments), ids)


def tool_result(
    call_id: str | None,
    name: str | None,
    content: Any = None,
    is_error: bool | None = None,
    **ids: Any,
) -> Message:
    """The result of a tool call.

    Args:
        call_id: the ``id`` of the ``tool_call`` it answers.
        name: the tool's name.
        content: the result: a string or any JSON value.
        is_error: True when the call failed (``content`` then says why).
        **ids: Message ids (``message_id``, ``block_id``, ``thread_id``...).
    """
    return _msg(
        TOOL_RESULT,
        ToolResultProps(call_id=call_id, name=name, content=content, is_error=is_error or None),
        ids,
    )


def error(message: str, code: str | None = None, details: Any = None, **ids: Any) -> Message:
    """An error the user can read.

    Args:
        message: what went wrong, for the user.
        code: a machine-readable code (``busy``, ``timeout``...).
        details: any JSON value with more about it.
        **ids: Message ids (``message_id``, ``block_id``, ``thread_id``...).
    """
    return _msg(ERROR, ErrorProps(message=message, code=code, details=details), ids)


def image(url: str, alt: str | None = None, **kw: Any) -> Message:
    """An image by URL.

    Args:
        url: where the image is.
        alt: its text alternative.
        **kw: ``width``, ``height``, ``detail``, and Message ids (``message_id``...).
    """
    ids, props = _split(kw)
    return _msg(IMAGE, ImageProps(url=url, alt=alt, **props), ids)


def audio(url: str, **kw: Any) -> Message:
    """An audio clip by URL.

    Args:
        url: where the clip is.
        **kw: ``format``, ``duration``, ``transcript``, ``autoplay``, ``controls``, and
            Message ids (``message_id``...).
    """
    ids, props = _split(kw)
    return _msg(AUDIO, AudioProps(url=url, **props), ids)


def video(url: str, **kw: Any) -> Message:
    """A video by URL.

    Args:
        url: where the video is.
        **kw: ``format``, ``duration``, ``thumbnail``, ``width``, ``height``, ``autoplay``,
            ``controls``, ``loop``, and Message ids (``message_id``...).
    """
    ids, props = _split(kw)
    return _msg(VIDEO, VideoProps(url=url, **props), ids)


def action(name: str, payload: Any = None, **ids: Any) -> Message:
    """A system command for the client (silent in plain-text wires).

    Args:
        name: the command's name.
        payload: its argument, any JSON value.
        **ids: Message ids (``message_id``, ``block_id``, ``thread_id``...).
    """
    return _msg(ACTION, ActionProps(name=name, payload=payload), ids)


def event(
    name: str, data: Mapping[str, Any] | None = None, message: str | None = None, **ids: Any
) -> Message:
    """An event Message; lifecycle events are built by the writer.

    Args:
        name: the event's name.
        data: its data, a JSON object.
        message: a line for people to read.
        **ids: Message ids (``message_id``, ``block_id``, ``thread_id``...).
    """
    return _msg(
        EVENT,
        EventProps(event=name, message=message, data=dict(data) if data is not None else None),
        ids,
    )


def card_texts(node: Any) -> list[str]:
    """The text and heading values of a custom card's element tree, in order (what a reader
    that renders no cards is shown of it).

    Args:
        node: the tree (a custom card payload's ``root``), as JSON values.
    """
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            if n.get("type") in ("text", "heading") and isinstance(n.get("value"), str):
                out.append(n["value"])
            stack.extend(reversed([v for v in n.values() if isinstance(v, (dict, list))]))
        elif isinstance(n, list):
            stack.extend(reversed(n))
    return out


def card(
    kind: str,
    payload: Any,
    card_id: str | None = None,
    terminal: bool | None = None,
    **ids: Any,
) -> Message:
    """An interactive card (carousel, detail, form, review or custom).

    Args:
        kind: the card's kind (:data:`CARD_KINDS`).
        payload: its payload: a dict, or one of uagents-core's card payload models.
        card_id: its id, echoed by the answer (None: none).
        terminal: no answer is expected.
        **ids: Message ids (``message_id``, ``block_id``, ``thread_id``...).
    """
    if hasattr(payload, "model_dump"):  # a pydantic v2 model (uagents-core's card payloads)
        payload = payload.model_dump(mode="json", exclude_none=True)
    props = CardProps.model_validate(
        {"kind": kind, "payload": payload, "card_id": card_id, "terminal": terminal}
    )
    return _msg(CARD, props, ids)


def user_input(
    content: str, role: str | None = None, name: str | None = None, **ids: Any
) -> Message:
    """What the user typed.

    Args:
        content: the text.
        role: who wrote it (``user``...).
        name: the writer's name.
        **ids: Message ids (``message_id``, ``block_id``, ``thread_id``...).
    """
    return _msg(USER_INPUT, UserInputProps(content=content, role=role, name=name), ids)


_ID_FIELDS = frozenset(("chunk_id", "message_id", "block_id", "thread_id", "metadata"))


def _split(kw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    ids = {k: v for k, v in kw.items() if k in _ID_FIELDS}
    props = {k: v for k, v in kw.items() if k not in _ID_FIELDS}
    return ids, props


# -- event payloads ---------------------------------------------------------------------------
class _EventData(BaseModel):
    model_config = ConfigDict(extra="allow")

    def to_data(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class StreamStartData(_EventData):
    """The data of ``stream_start`` events."""

    request_id: str | None = None
    trace_id: str | None = None
    timestamp: int | None = None


class Usage(BaseModel):
    """Token counts, as a ``stream_end`` carries them."""

    model_config = ConfigDict(extra="allow")

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None


class StreamEndData(_EventData):
    """The data of ``stream_end`` events."""

    request_id: str | None = None
    timestamp: int | None = None
    duration_ms: int | None = None
    status: Status = "completed"
    error: str | None = None
    usage: Usage | None = None
    finish_reason: str | None = None
    withheld: list[str] | None = None  # channels the sender kept from this recipient


class ThreadStartData(_EventData):
    """The data of ``thread_start`` events."""

    thread_id: str
    type: str | None = None
    label: str | None = None


class ThreadEndData(_EventData):
    """The data of ``thread_end`` events."""

    thread_id: str
    duration_ms: int | None = None
    status: Status = "completed"


class BlockStartData(_EventData):
    """The data of ``block_start`` events."""

    block_id: str
    type: str | None = None
    label: str | None = None


class BlockEndData(_EventData):
    """The data of ``block_end`` events."""

    block_id: str
    duration_ms: int | None = None
    message_count: int | None = None
    status: Status = "completed"


class MessageStartData(_EventData):
    """The data of ``message_start`` events."""

    message_id: str
    type: str | None = None
    thread_id: str | None = None
    tool_call: dict[str, Any] | None = None


class MessageEndData(_EventData):
    """The data of ``message_end`` events."""

    message_id: str
    type: str | None = None
    thread_id: str | None = None
    duration_ms: int | None = None
    chunk_count: int | None = None
    status: str = "completed"
    extra: dict[str, Any] | None = None


EVENT_DATA_MODELS: dict[str, type[_EventData]] = {
    STREAM_START: StreamStartData,
    STREAM_END: StreamEndData,
    THREAD_START: ThreadStartData,
    THREAD_END: ThreadEndData,
    BLOCK_START: BlockStartData,
    BLOCK_END: BlockEndData,
    MESSAGE_START: MessageStartData,
    MESSAGE_END: MessageEndData,
}


def event_data(msg: Message) -> _EventData | None:
    """A lifecycle event's data as its model (None for other Messages).

    Args:
        msg: the Message.

    Raises:
        InvalidMessage: the data does not fit the event's model.
    """
    name = msg.event
    model = EVENT_DATA_MODELS.get(name) if name else None
    if model is None:
        return None
    try:
        return model.model_validate(msg.event_data)
    except ValidationError as exc:
        raise InvalidMessage(f"{name} data: {_explain(exc)}") from None


# -- JSON types of built-in fields -------------------------------------------------------------
_ADAPTERS: dict[tuple[type[BaseModel], str], TypeAdapter[Any]] = {}


def field_type_errors(model: type[BaseModel], data: Mapping[str, Any], where: str) -> list[str]:
    """``where.field: reason`` for each field of ``model`` present in ``data`` with the wrong type.

    Strict: ``"5"`` is not an integer, ``12`` not a string. Absent fields and fields ``model``
    does not declare are not checked.

    Args:
        model: the pydantic model declaring the fields' types.
        data: the decoded JSON object.
        where: the object's path, the reports' prefix (``props``...).
    """
    out: list[str] = []
    for name, value in data.items():
        field = model.model_fields.get(name) if isinstance(name, str) else None
        if field is None:
            continue
        ta = _ADAPTERS.get((model, name))
        if ta is None:
            ta = _ADAPTERS[(model, name)] = TypeAdapter(field.annotation or Any)
        try:
            ta.validate_python(value, strict=True)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in (where, name, *err["loc"]))
            out.append(f"{loc}: {err['msg']}")
    return out


def type_errors(msg: Message) -> list[str]:
    """What has the wrong JSON type in a built-in type's props or a lifecycle event's data.

    Only the fields present are checked, so delta chunks (which carry part of the props) pass.
    Typed values stay typed: a chunk_count of ``"lots"``, a usage figure of ``"5"`` or a text
    ``content`` of ``12`` is reported, not coerced.

    Args:
        msg: the Message.

    Returns:
        One ``path: reason`` line per wrong field; empty when all is well.
    """
    props = msg.props
    if not props:
        return []
    model = PROPS_MODELS.get(msg.type)
    out = field_type_errors(model, props, "props") if model is not None else []
    name = msg.event
    data_model = EVENT_DATA_MODELS.get(name) if name else None
    data = props.get("data")
    if data_model is not None and isinstance(data, Mapping):
        out += field_type_errors(data_model, data, "props.data")
    return out


def lifecycle(name: str, data: _EventData, **ids: Any) -> Message:
    """A lifecycle event Message.

    Args:
        name: the event's name (``stream_start``, ``block_end``...).
        data: its data model.
        **ids: Message ids (``message_id``, ``block_id``, ``thread_id``...).
    """
    return Message(type=EVENT, props={"event": name, "data": data.to_data()}, **ids)
