"""The wires: one pure translator per format (Messages in, wire objects out, and back).

Pick a wire by the client's ``accept`` with :func:`writer_for` (a StreamWriter writing that
wire) or :func:`sink_for`; look wires up in the registry (:func:`wires`, :func:`wire_named`,
:func:`wire_for`), where each is described once. The encoders and decoders themselves are
loaded on first use, so a missing optional extra (AG-UI, A2A) matters only to its wire.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_stream.adapters.framing import Encoder, run_encoder
from agent_stream.adapters.registry import Wire, wire_named, wires
from agent_stream.adapters.routing import (
    WireSink,
    content_type,
    encoder_for,
    frame_for,
    sink_for,
    wire_for,
    writer_for,
)

if TYPE_CHECKING:
    from agent_stream.adapters.a2a import A2ADecoder, A2AEncoder
    from agent_stream.adapters.agui import AGUIEncoder
    from agent_stream.adapters.aisdk import AISDKEncoder
    from agent_stream.adapters.channels import ChannelsEncoder
    from agent_stream.adapters.chat import ChatDecoder, ChatEncoder
    from agent_stream.adapters.cui import CUIEncoder
    from agent_stream.adapters.openai import OpenAIDecoder, OpenAIEncoder, OpenAISSEDecoder

__all__ = [
    "A2ADecoder",
    "A2AEncoder",
    "AGUIEncoder",
    "AISDKEncoder",
    "CUIEncoder",
    "ChannelsEncoder",
    "ChatDecoder",
    "ChatEncoder",
    "Encoder",
    "OpenAIDecoder",
    "OpenAIEncoder",
    "OpenAISSEDecoder",
    "Wire",
    "WireSink",
    "content_type",
    "encoder_for",
    "frame_for",
    "run_encoder",
    "sink_for",
    "wire_for",
    "wire_named",
    "wires",
    "writer_for",
]

_LAZY = {
    "A2ADecoder": "a2a",
    "A2AEncoder": "a2a",
    "AGUIEncoder": "agui",
    "AISDKEncoder": "aisdk",
    "CUIEncoder": "cui",
    "ChannelsEncoder": "channels",
    "ChatDecoder": "chat",
    "ChatEncoder": "chat",
    "OpenAIDecoder": "openai",
    "OpenAIEncoder": "openai",
    "OpenAISSEDecoder": "openai",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
