"""A2A (Agent2Agent) streaming: ``A2AEncoder`` out, ``A2ADecoder`` in (needs ``a2a-sdk``)."""

try:  # the package's modules need it: one clear error, whichever of them is imported first
    import a2a.compat.v0_3.types  # noqa: F401
except ImportError as _exc:  # the optional extra is not installed
    from agent_stream.errors import MissingDependency

    raise MissingDependency(
        "the A2A format needs the 'a2a-sdk' package: pip install 'agent-stream[a2a]'"
    ) from _exc

from agent_stream.adapters.a2a.decoder import A2ADecoder
from agent_stream.adapters.a2a.encoder import KEY, A2AEncoder, encode_messages

__all__ = ["KEY", "A2ADecoder", "A2AEncoder", "encode_messages"]
