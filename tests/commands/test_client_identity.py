"""The client identity `ask` and `chat` use: one seed per user, made on first use, kept private;
session ids are version-4 UUIDs."""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

import pytest

from agent_stream.commands._identity import SeedError, client_seed, session_id
from agent_stream.gateway.a2a import ContextSessions


def test_made_once_then_read_back(tmp_path: Path) -> None:
    path = tmp_path / "agent-stream-me" / "client" / "seed"
    seed = client_seed(path)
    assert len(seed) == 64 and int(seed, 16) >= 0
    assert client_seed(path) == seed
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["seed"]  # no temporary file left


def test_a_seed_open_to_others_or_not_ours_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "client" / "seed"
    client_seed(path)
    path.chmod(0o640)
    with pytest.raises(SeedError, match="open to group or others"):
        client_seed(path)
    path.chmod(0o600)
    path.parent.chmod(0o755)
    with pytest.raises(SeedError, match=r"folder .* open to group or others"):
        client_seed(path)
    path.parent.chmod(0o700)
    path.unlink()
    os.symlink(tmp_path / "elsewhere", path)
    with pytest.raises(SeedError, match="symbolic link"):
        client_seed(path)
    path.unlink()
    path.write_text("short")
    path.chmod(0o600)
    with pytest.raises(SeedError, match="no usable seed"):
        client_seed(path)


def test_session_ids_are_uuid4() -> None:
    good = uuid.uuid4()
    assert session_id(f" {good} ") == good
    for bad in ("nope", "", str(uuid.uuid1()), "00000000-0000-0000-0000-000000000000"):
        with pytest.raises(ValueError):
            session_id(bad)


def test_a2a_contexts_are_remembered_within_a_bound() -> None:
    contexts = ContextSessions(limit=3)
    first = contexts.session("key", "c1")
    assert contexts.session("key", "c1") == first
    assert contexts.session("other key", "c1") != first  # per caller
    for i in range(2, 10):
        contexts.session("key", f"c{i}")
    assert len(contexts) == 3
    assert contexts.session("key", "c1") != first  # forgotten: starts afresh
