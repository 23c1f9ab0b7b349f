"""A2A (Agent2Agent) streaming: ``A2AEncoder`` out, ``A2ADecoder`` in (needs ``a2a-sdk``)."""

from agent_stream.adapters.a2a.decoder import A2ADecoder
from agent_stream.adapters.a2a.encoder import KEY, A2AEncoder, encode_messages

__all__ = ["KEY", "A2ADecoder", "A2AEncoder", "encode_messages"]
