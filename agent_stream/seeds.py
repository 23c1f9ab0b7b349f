"""Seeds: an agent's private key derives from its seed, so a short seed is a guessable key.

Anyone who guesses the seed can sign as the agent. Below :data:`MIN_SEED_CHARS` characters a
seed is warned about everywhere one is taken, and refused on a network.
"""

from __future__ import annotations

import warnings

__all__ = ["MIN_SEED_CHARS", "WeakSeedWarning", "seed_problem", "warn_weak_seed"]

MIN_SEED_CHARS = 16


class WeakSeedWarning(UserWarning):
    """A seed too short to be a secret (the agent's key can be guessed from it)."""


def seed_problem(seed: str) -> str | None:
    """Why ``seed`` is not safe as a private key, else None.

    Args:
        seed: the agent's seed.
    """
    if len(seed) < MIN_SEED_CHARS:
        chars = "character" if len(seed) == 1 else "characters"
        return (
            f"the seed is {len(seed)} {chars} long: anyone who guesses it can sign as "
            f"this agent; use at least {MIN_SEED_CHARS} random characters (e.g. "
            "`python -c 'import secrets; print(secrets.token_hex(32))'`)"
        )
    return None


def warn_weak_seed(seed: str, who: str, stacklevel: int = 3) -> None:
    """Issue a :class:`WeakSeedWarning` when ``seed`` is too short.

    Args:
        seed: the agent's seed.
        who: what takes it (``local_agent``, ``network_agent``), named in the message.
        stacklevel: passed to :func:`warnings.warn` (3: the builder's caller).
    """
    problem = seed_problem(seed)
    if problem is not None:
        warnings.warn(f"{who}: {problem}", WeakSeedWarning, stacklevel=stacklevel)
