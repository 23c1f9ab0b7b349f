"""``ask``: one question through tests/peers/relay_asker.py (a real agent process on 127.0.0.1),
and what it read, its Messages as ``msgs`` (test_relay_agents.py, test_team_shared_name.py)."""

from __future__ import annotations

import json
import time
from typing import Any

from agents_harness import PEERS, Harness, free_port
from replay_answers import QUESTION

from agent_stream.message import Message


def ask(
    harness: Harness, to: str, question: str = QUESTION, *extra: str, timeout: float = 60
) -> dict[str, Any]:
    port = free_port()
    p = harness.start(
        str(PEERS / "relay_asker.py"),
        "--port",
        str(port),
        "--seed",
        f"relay asker {port} {time.time_ns()}",
        "--to",
        to,
        "--question",
        question,
        *extra,
    )
    code, out, err = p.finish(timeout=timeout)
    assert code == 0, err
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["msgs"] = [Message.from_dict(m) for m in result["messages"]]
    return result
