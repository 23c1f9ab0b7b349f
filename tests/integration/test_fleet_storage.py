"""A fleet replica's ``ctx.storage`` is its own: two `serve --fleet` replicas of one address,
started in one working directory, write two files (uagents would have them share one, named
after the address, each overwriting the other's writes). Plus the bad names of a replica's store.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents_harness import Harness, address_of
from uagents.dispatch import dispatcher

from agent_stream.cli import build_parser
from agent_stream.commands.serve import build
from agent_stream.uagents.fleet._fleet import use_replica_storage
from agent_stream.uagents.local._agents import free_port, local_agent

pytestmark = pytest.mark.integration

# A responder that counts, in ctx.storage (the request's storage), the questions it answered.
APP = """
async def app(request):
    n = (request.storage.get("answered") or 0) + 1
    request.storage.set("answered", n)

    async def chunks():
        yield {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": f"answer number {n}"}}],
        }

    return chunks()
"""


def stored(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    return data


def test_two_replicas_in_one_directory_write_storage_of_their_own(
    harness: Harness, redis_url: str
) -> None:
    app = harness.workdir / "counting_app.py"
    app.write_text(APP)
    seed = f"fleet storage seed {uuid.uuid4()}"
    address = address_of(seed)
    replicas = []
    for _ in range(2):
        p, got, endpoint = harness.serve("--app", f"{app}:app", "--fleet", redis_url, seed=seed)
        assert got == address
        replicas.append((p, endpoint))
    try:
        for (_p, endpoint), times in zip(replicas, (2, 1), strict=True):
            for i in range(times):
                code, out, err = harness.cli(
                    "ask", address, "--endpoint", endpoint, "--json", "--timeout", "30", "count"
                ).finish(60)
                assert code == 0, (
                    err + replicas[0][0].stderr[-3000:] + replicas[1][0].stderr[-3000:]
                )
                assert f"answer number {i + 1}" in out
    finally:
        for p, _ in replicas:
            p.stop()
    ports = [endpoint.rsplit(":", 1)[1].split("/", 1)[0] for _, endpoint in replicas]
    files = [harness.workdir / f"{address[:16]}_{port}_data.json" for port in ports]
    assert [stored(f).get("answered") for f in files] == [2, 1]
    # uagents' shared file (named after the address alone) was not written
    assert "answered" not in stored(harness.workdir / f"{address[:16]}_data.json")


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    monkeypatch.chdir(tmp_path)
    agents: list[Any] = []
    yield agents
    for a in agents:
        dispatcher.unregister(a.address, a)


def test_serve_gives_a_replica_its_own_store_and_a_lone_agent_uagents_own(
    in_tmp: list[Any], tmp_path: Path
) -> None:
    seed = f"fleet storage build {uuid.uuid4()}"
    address = address_of(seed)
    port = free_port()
    (tmp_path / f"{address[:16]}_{port}_data.json").write_text('{"kept": "from before"}')
    fleet_args = build_parser().parse_args(
        ["serve", "--no-directory", "--port", str(port), "--fleet", "redis://127.0.0.1:9/0"]
    )
    replica, _chat, _ = build(fleet_args, seed)
    in_tmp.append(replica)
    assert replica.storage.get("kept") == "from before"  # a restarted replica reads it back
    replica.storage.set("mine", 1)
    assert stored(tmp_path / f"{address[:16]}_{port}_data.json")["mine"] == 1
    alone = build_parser().parse_args(["serve", "--no-directory", "--port", str(free_port())])
    agent, _chat, _ = build(alone, seed)
    in_tmp.append(agent)
    agent.storage.set("theirs", 2)
    assert stored(tmp_path / f"{address[:16]}_data.json") == {"theirs": 2}


@pytest.mark.parametrize(
    "tag", ["", "a/b", "../up", "/abs", "x" * 65, "a b", "port\n1", "é", ".", "..", None, 8001]
)
def test_a_bad_replica_storage_name_is_refused(in_tmp: list[Any], tag: Any) -> None:
    agent = local_agent(f"fleet storage bad tag {time.time_ns()}", free_port(), directory=None)
    in_tmp.append(agent)
    before = agent.storage
    with pytest.raises(ValueError, match="replica storage"):
        use_replica_storage(agent, tag)
    assert agent.storage is before
