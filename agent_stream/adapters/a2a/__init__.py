"""A2A (Agent2Agent) streaming: ``A2AEncoder`` out, ``A2ADecoder`` in (needs ``a2a-sdk``)."""

from agent_stream.adapters.a2a.decoder import A2ADecoder, cli_decoder
from agent_stream.adapters.a2a.encoder import KEY, A2AEncoder, cli_encode, encode_messages

__all__ = ["KEY", "A2ADecoder", "A2AEncoder", "cli_decoder", "cli_encode", "encode_messages"]
