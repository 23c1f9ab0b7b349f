"""The user's client identity for `ask` and `chat`: one seed, created on first use, kept private.

An agent remembers a conversation per (asker's address, session), so `ask --session UUID` only
continues a conversation when it asks from the same address as before. The seed lives in
``client/seed`` beside the local directory (``<temp dir>/agent-stream-<user>/`` or the folder of
``$AGENT_STREAM_DIRECTORY``): the folder is created 0700, the file 0600, and either is refused
when owned by someone else or open to group or others (whoever reads the seed can ask as this
user, and read the conversations' replies).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import uuid
from pathlib import Path

__all__ = ["SeedError", "client_seed", "client_seed_path", "session_id"]


class SeedError(PermissionError):
    """The stored client seed cannot be used (not private, not ours, unreadable)."""


def client_seed_path() -> Path:
    """Where the client seed is kept (beside the local directory)."""
    from agent_stream.uagents.local._directory import default_directory_path

    return default_directory_path().parent / "client" / "seed"


def _private(path: Path, what: str, mode_mask: int) -> None:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        raise SeedError(f"{what} {path} is a symbolic link; remove it (a new seed is made)")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise SeedError(f"{what} {path} belongs to another user; remove it or give --seed")
    if info.st_mode & mode_mask:
        raise SeedError(
            f"{what} {path} is open to group or others "
            f"(chmod {'700' if what == 'folder' else '600'} {path}, or give --seed)"
        )


def client_seed(path: Path | None = None) -> str:
    """The user's client seed: read from ``path``, or created there (``secrets.token_hex(32)``)
    on first use. SeedError when the file or its folder is not private to this user."""
    path = path or client_seed_path()
    folder = path.parent
    folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    _private(folder, "folder", 0o077)
    if not path.exists() and not path.is_symlink():
        _create(path)
    _private(path, "seed file", 0o077)
    seed = path.read_text(encoding="utf-8").strip()
    if len(seed) < 32:
        raise SeedError(f"seed file {path} holds no usable seed; remove it (a new one is made)")
    return seed


def _create(path: Path) -> None:
    """Write a new seed to ``path`` whole: a private temporary file linked into place, so two
    first uses at once agree on one seed and nobody reads a half-written file."""
    tmp = path.with_name(f".seed-{os.getpid()}-{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(secrets.token_hex(32) + "\n")
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)  # another process made it first: theirs is kept
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def session_id(text: str) -> uuid.UUID:
    """A session id given on the command line: a UUID4 (as the envelope requires);
    ValueError otherwise."""
    try:
        value = uuid.UUID(text.strip())
    except ValueError:
        raise ValueError(f"not a session id (a UUID such as {uuid.uuid4()}): {text!r}") from None
    if value.version != 4 or value.variant != uuid.RFC_4122:
        raise ValueError(f"a session id is a version-4 UUID, got {text!r}")
    return value
