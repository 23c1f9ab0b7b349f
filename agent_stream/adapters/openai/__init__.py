"""OpenAI Chat Completions streaming, both ways. Pure: dicts and strings in, Messages out, and back.

- :mod:`.decoder`: ``OpenAIDecoder``, ``chat.completion.chunk`` dicts -> Messages.
- :mod:`.sse`: ``OpenAISSEDecoder``, SSE text -> chunk dicts -> Messages.
- :mod:`.encoder`: ``OpenAIEncoder``, Messages -> the wire items of :mod:`.chunks`.
- :mod:`.chunks`: those items (chunks, usage chunk, error object, ``[DONE]``) and ``frame_sse``.
"""

from agent_stream.adapters.openai.chunks import (
    DONE,
    FINISH_REASONS,
    Chunk,
    Done,
    ErrorObject,
    OpenAIItem,
    UsageChunk,
    frame_sse,
)
from agent_stream.adapters.openai.decoder import OpenAIDecoder, decode_chunks
from agent_stream.adapters.openai.encoder import OpenAIEncoder, encode_messages
from agent_stream.adapters.openai.sse import OpenAISSEDecoder

__all__ = [
    "DONE",
    "FINISH_REASONS",
    "Chunk",
    "Done",
    "ErrorObject",
    "OpenAIDecoder",
    "OpenAIEncoder",
    "OpenAIItem",
    "OpenAISSEDecoder",
    "UsageChunk",
    "decode_chunks",
    "encode_messages",
    "frame_sse",
]
