"""agent_stream: hierarchical streaming of agent and LLM output between Fetch.ai agents.

The one currency is :class:`Message`; authors write with :class:`StreamWriter`, receivers rebuild
whole messages with :class:`Assembler`. Wire adapters live in ``agent_stream.adapters``, the
uAgents plugin in ``agent_stream.uagents``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_stream.assemble import Assembler, MessageState, Transcript, assemble
from agent_stream.errors import (
    ChunkerConfigError,
    DeltaError,
    InvalidMessage,
    StreamError,
    StreamWarning,
    UnknownMessage,
    WireError,
)
from agent_stream.ids import IdGenerator
from agent_stream.message import (
    Message,
    Metadata,
    action,
    audio,
    card,
    error,
    event,
    image,
    loading,
    progress,
    text,
    thinking,
    tool_call,
    tool_result,
    user_input,
    video,
)
from agent_stream.relay import RelayError
from agent_stream.toolcall import ToolCallScope
from agent_stream.writer import BlockScope, MessageHandle, StreamWriter, ThreadScope, collect

if TYPE_CHECKING:
    from agent_stream.chunking import TextChunker
    from agent_stream.render import LiveRenderer

__version__ = "0.1.0"

__all__ = [
    "Assembler",
    "BlockScope",
    "ChunkerConfigError",
    "DeltaError",
    "IdGenerator",
    "InvalidMessage",
    "LiveRenderer",
    "Message",
    "MessageHandle",
    "MessageState",
    "Metadata",
    "RelayError",
    "StreamError",
    "StreamWarning",
    "StreamWriter",
    "TextChunker",
    "ThreadScope",
    "ToolCallScope",
    "Transcript",
    "UnknownMessage",
    "WireError",
    "action",
    "assemble",
    "audio",
    "card",
    "collect",
    "error",
    "event",
    "image",
    "loading",
    "progress",
    "text",
    "thinking",
    "tool_call",
    "tool_result",
    "user_input",
    "video",
]


def __getattr__(name: str) -> Any:
    # imported when first used: the compiled chunker, and rich for the live renderer
    if name == "TextChunker":
        from agent_stream.chunking import TextChunker

        return TextChunker
    if name == "LiveRenderer":
        from agent_stream.render import LiveRenderer

        return LiveRenderer
    raise AttributeError(f"module 'agent_stream' has no attribute {name!r}")
