"""The public API, package by package: each ``__all__`` is pinned here, every name in it can be
imported, and nothing else of ours is public there. Changing the public API means changing this
file on purpose."""

from __future__ import annotations

import importlib
import types

import pytest

PUBLIC: dict[str, set[str]] = {
    "agent_stream": {
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
    },
    "agent_stream.uagents": {
        "AGENTVERSE_QUOTA",
        "AmbiguousName",
        "ChannelPolicy",
        "ChatProtocolConflict",
        "ChatRequest",
        "ChatSettings",
        "Clock",
        "DeliveryError",
        "DeliveryPolicy",
        "DirectoryError",
        "DrivenClock",
        "Fleet",
        "GuardSettings",
        "HistoryLimits",
        "LaneLimits",
        "LocalAgent",
        "LocalDirectory",
        "LocalResolver",
        "LoopClock",
        "PeerQuota",
        "PeerQuotas",
        "PortInUse",
        "Protection",
        "PumpLimits",
        "Reply",
        "ReplyLimits",
        "ReplyStats",
        "Responder",
        "SessionLimits",
        "SessionStore",
        "StreamingChat",
        "Turn",
        "UagentsCompatError",
        "open_store",
        "delegate",
        "endpoint_for",
        "free_port",
        "local_agent",
        "local_resolver",
        "network_agent",
        "parse_peers",
        "protect",
        "run_agent",
        "serve_agent",
        "wrap_chat_handler",
    },
    # the rooms of the uAgents side, each with what the package above takes from it
    "agent_stream.uagents.asker": {"DeliveryError", "Reply", "delegate"},
    "agent_stream.uagents.responder": {
        "MemorySessionStore",
        "PumpLimits",
        "RedisSessionStore",
        "SessionLimits",
        "SessionStore",
        "SqliteSessionStore",
        "open_store",
        "wrap_chat_handler",
    },
    "agent_stream.uagents.transport": {"GuardSettings", "LaneLimits"},
    "agent_stream.uagents.fleet": {"Fleet", "use_replica_storage"},
    "agent_stream.uagents.local": {
        "AmbiguousName",
        "DirectoryError",
        "LocalAgent",
        "LocalDirectory",
        "LocalResolver",
        "PortInUse",
        "endpoint_for",
        "free_port",
        "local_agent",
        "local_resolver",
        "network_agent",
        "parse_peers",
        "run_agent",
        "serve_agent",
    },
    "agent_stream.sources": {
        "ModelSource",
        "OpenAIModel",
        "ReplayModel",
        "make_source",
        "responder_for",
    },
    # one module per framework source, each with its responder(...) and its own helpers
    "agent_stream.sources.langgraph": {"GraphStream", "build_input", "responder"},
    "agent_stream.sources.pydantic_ai": {"AgentEvents", "history_of", "responder", "run_sub_agent"},
    "agent_stream.sources.openai_agents": {
        "AgentRun",
        "agent_tools_of",
        "input_of",
        "nested_events",
        "responder",
    },
    "agent_stream.sources.anthropic": {"EVENT_TYPES", "AnthropicStream", "responder"},
    "agent_stream.sources.openai_responses": {"ResponsesStream", "responder"},
    "agent_stream.chunking": {"IMPLEMENTATION", "TextChunker"},
    "agent_stream.adapters": {
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
    },
    "agent_stream.gateway": {"Gateway", "GatewayConfig", "build_app", "run_gateway"},
}


def _ours(value: object) -> bool:
    return str(getattr(value, "__module__", "") or "").startswith("agent_stream")


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_all_is_pinned(package: str) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) == PUBLIC[package]
    assert len(module.__all__) == len(set(module.__all__)), "a name listed twice"


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_every_exported_name_imports(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_nothing_else_of_ours_is_public(package: str) -> None:
    """A class or function of agent_stream reachable as a public attribute of the package is in
    its ``__all__`` (modules and names from other libraries aside)."""
    module = importlib.import_module(package)
    extra = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and _ours(value)
        and name not in module.__all__
    }
    assert extra == set()


def test_the_readme_imports_public_names_only() -> None:
    """Every ``from agent_stream... import`` in the README names a public package above and
    names in its ``__all__``."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    found = re.findall(r"^\s*from (agent_stream[\w.]*) import ([^\n(]+)$", readme, re.M)
    assert found
    for package, names in found:
        assert package in PUBLIC, f"README imports from {package}, not a public package"
        for name in (n.strip().split(" as ")[0] for n in names.split("#")[0].split(",")):
            assert name in PUBLIC[package], f"README imports {name} from {package}"


# examples/formats_demo.py writes docs/formats.md with the command line's own encoders (the
# bytes test_docs pins): a tool of the docs, not an example of the API.
NOT_EXAMPLES = {"formats_demo.py"}


def _imports(source: str) -> list[tuple[str, list[str]]]:
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agent_stream"):
            found.append((node.module or "", [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("agent_stream")]
    return found


def test_examples_agents_and_docs_import_public_names_only() -> None:
    """examples/, agents/ and the docs' Python blocks import from the public packages above
    only, and only names in their ``__all__``."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sources = [
        (p, p.read_text(encoding="utf-8"))
        for folder in ("examples", "agents")
        for p in sorted((root / folder).glob("*.py"))
        if p.name not in NOT_EXAMPLES
    ]
    for page in sorted((root / "docs").rglob("*.md")):
        for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            sources.append((page, block))
    assert len(sources) > 10
    for path, source in sources:
        for module, names in _imports(source):
            assert module in PUBLIC, f"{path.name} imports from {module}, not a public package"
            for name in names:
                assert name in PUBLIC[module], f"{path.name} imports {name} from {module}"
