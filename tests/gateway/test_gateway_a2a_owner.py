"""A2A tasks are their caller's, and the gateway keeps a bounded number of them: over the
gateway's own app (real HTTP on 127.0.0.1, agents answering given replies), raw JSON-RPC.

- every method naming a task answers another API key's task as it answers an unknown id
  (-32001), and leaves the task as it was;
- past ``max_tasks_per_key`` / ``max_tasks`` finished tasks are forgotten least recently used
  first (then not found), and a new task is refused (-32000, nothing asked) when all are open;
- malformed requests get the JSON-RPC error a2a-sdk would give, with no error logged and no
  traceback;
- a reply that continues a task replays (``Last-Event-ID``) as its live stream went."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from inprocess_gateway import serve_gateway

from agent_stream.gateway.config import GatewayConfig
from agent_stream.message import event, text, user_input

pytestmark = pytest.mark.integration

ASKS = [
    event("stream_start", {"request_id": "q"}),
    text("Drafted.", message_id="M1"),
    user_input("Send it?", message_id="M2"),
    event("stream_end", {"status": "completed"}),
]
DONE = [
    event("stream_start", {"request_id": "q"}),
    text("Sent.", message_id="M1"),
    event("stream_end", {"status": "completed"}),
]
K1 = {"authorization": "Bearer k1"}
K2 = {"authorization": "Bearer k2"}


def _send(method: str, words: str, task_id: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "user",
        "messageId": str(uuid4()),
        "kind": "message",
        "parts": [{"kind": "text", "text": words}],
    }
    if task_id is not None:
        message["taskId"] = task_id
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"message": message}}


def _call(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 8, "method": method, "params": params}


def _data(r: httpx.Response) -> list[dict[str, Any]]:
    """Each JSON-RPC response of a reply (one, or one per SSE event)."""
    assert r.status_code == 200, r.text
    assert "Traceback" not in r.text, r.text
    if r.headers["content-type"].startswith("text/event-stream"):
        return [json.loads(x[5:]) for x in r.text.splitlines() if x.startswith("data:")]
    return [r.json()]


async def _error(http: httpx.AsyncClient, url: str, body: Any, **kw: Any) -> dict[str, Any]:
    """The JSON-RPC error ``body`` is answered with (as JSON, or as the one SSE event)."""
    r = await http.post(url, json=body, **kw)
    [reply] = _data(r)
    assert "result" not in reply, reply
    error: dict[str, Any] = reply["error"]
    return error


async def _result(http: httpx.AsyncClient, url: str, body: Any, **kw: Any) -> dict[str, Any]:
    r = await http.post(url, json=body, **kw)
    [reply] = _data(r)
    assert "error" not in reply, reply
    result: dict[str, Any] = reply["result"]
    return result


async def _task(http: httpx.AsyncClient, url: str, words: str, **kw: Any) -> dict[str, Any]:
    return await _result(http, url, _send("message/send", words), **kw)


def _no_errors_logged(caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [
        r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR
    ]
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err


async def test_another_keys_task_is_not_found_by_any_method(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], ASKS, api_keys=["k1", "k2"]) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        rpc = f"{url}/a2a/solo"
        asked = await _task(http, rpc, "email Bob", headers=K1)
        tid = asked["id"]
        assert asked["status"]["state"] == "input-required"
        v1 = {"A2A-Version": "1.0"}
        for method, version in (
            ("tasks/get", {}),
            ("tasks/cancel", {}),
            ("tasks/resubscribe", {}),
            ("GetTask", v1),
            ("CancelTask", v1),
            ("SubscribeToTask", v1),
        ):
            for params, who in (({"id": tid}, K2), ({"id": "no-such-task"}, K1)):
                err = await _error(http, rpc, _call(method, params), headers={**who, **version})
                assert err["code"] == -32001, (method, who, err)
                assert "not found" in err["message"].lower()
        # ListTasks lists the caller's own tasks only
        listed = await _result(http, rpc, _call("ListTasks", {}), headers={**K2, **v1})
        assert listed.get("tasks", []) == []
        listed = await _result(http, rpc, _call("ListTasks", {}), headers={**K1, **v1})
        assert [t["id"] for t in listed["tasks"]] == [tid]
        # push notifications are not offered: the same answer whoever's task it names
        for method, params, version in (
            ("tasks/pushNotificationConfig/get", {"id": tid}, {}),
            ("tasks/pushNotificationConfig/list", {"id": tid}, {}),
            ("GetTaskPushNotificationConfig", {"taskId": tid, "id": "c"}, v1),
            ("ListTaskPushNotificationConfigs", {"taskId": tid}, v1),
        ):
            who = {**K2, **version}
            theirs = await _error(http, rpc, _call(method, params), headers=who)
            unknown = await _error(http, rpc, _call(method, {**params, "id": "nope"}), headers=who)
            assert theirs == unknown and theirs["code"] != -32001
        # the task is as it was: its caller reads it, its question still takes the answer
        got = await _result(http, rpc, _call("tasks/get", {"id": tid}), headers=K1)
        assert got["status"] == asked["status"] and got["artifacts"] == asked["artifacts"]
        link.messages = DONE
        done = await _result(http, rpc, _send("message/send", "yes", tid), headers=K1)
        assert done["id"] == tid and done["status"]["state"] == "completed"
        # a finished task stays its caller's only
        err = await _error(http, rpc, _call("tasks/get", {"id": tid}), headers=K2)
        assert err["code"] == -32001
        got = await _result(http, rpc, _call("tasks/get", {"id": tid}), headers=K1)
        assert got["status"]["state"] == "completed"
    assert [q for _, q in link.questions] == ["email Bob", "yes"]
    _no_errors_logged(caplog, capfd)


async def test_finished_tasks_are_forgotten_least_recently_used_first(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    async with (
        serve_gateway(
            tmp_path, ["solo"], DONE, api_keys=["k1", "k2"], max_tasks_per_key=2, max_tasks=3
        ) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        rpc = f"{url}/a2a/solo"

        async def state(tid: str, who: dict[str, str] = K1) -> str:
            r = await http.post(rpc, json=_call("tasks/get", {"id": tid}), headers=who)
            [reply] = _data(r)
            if "error" in reply:
                assert reply["error"]["code"] == -32001, reply
                return "not found"
            return str(reply["result"]["status"]["state"])

        a = (await _task(http, rpc, "a", headers=K1))["id"]
        b = (await _task(http, rpc, "b", headers=K1))["id"]
        assert await state(a) == "completed"  # a used last: b goes first
        c = (await _task(http, rpc, "c", headers=K1))["id"]
        assert [await state(t) for t in (a, b, c)] == ["completed", "not found", "completed"]

        # open tasks are never forgotten: two questions fill k1's room, then k1 is refused
        link.messages = ASKS
        d = (await _task(http, rpc, "d", headers=K1))["id"]
        e = (await _task(http, rpc, "e", headers=K1))["id"]
        assert [await state(t) for t in (a, c, d, e)] == [
            "not found",
            "not found",
            "input-required",
            "input-required",
        ]
        asked = len(link.questions)
        for method in ("message/send", "message/stream"):
            err = await _error(http, rpc, _send(method, "f"), headers=K1)
            assert err["code"] == -32000 and err["data"] == {"code": "too_many_tasks"}, err
            assert "2 tasks open" in err["message"] and "tasks/cancel" in err["message"]
        assert len(link.questions) == asked  # nothing was asked
        # the other key has room of its own until the gateway's total is all open tasks
        g = (await _task(http, rpc, "g", headers=K2))["id"]
        err = await _error(http, rpc, _send("message/send", "h"), headers=K2)
        assert err["code"] == -32000 and "the gateway has 3 tasks open" in err["message"]
        assert len(link.questions) == asked + 1
        # a question cancelled is finished: it makes room
        cancelled = await _result(http, rpc, _call("tasks/cancel", {"id": d}), headers=K1)
        assert cancelled["status"]["state"] == "canceled"
        f = (await _task(http, rpc, "f", headers=K1))["id"]
        assert [await state(t) for t in (d, e, f)] == [
            "not found",
            "input-required",
            "input-required",
        ]
        assert await state(g, K2) == "input-required"
        # an answer continues a kept task: it takes no new room
        link.messages = DONE
        done = await _result(http, rpc, _send("message/send", "yes", e), headers=K1)
        assert done["id"] == e and done["status"]["state"] == "completed"
    _no_errors_logged(caplog, capfd)


BAD: list[tuple[Any, int, str]] = [
    ("{not json", -32700, "not JSON"),
    ([1, 2], -32600, "not a JSON-RPC 2.0 request"),
    ({"jsonrpc": "2.0", "id": 1}, -32600, "method"),
    (_call("tasks/get", "an id"), -32600, "params"),
    ({"jsonrpc": "2.0", "id": 1, "method": "tasks/get"}, -32602, "params"),
    (_call("tasks/get", {}), -32602, "params.id"),
    (_call("tasks/get", {"id": 42}), -32602, "params.id"),
    (_call("tasks/get", {"id": ["x"]}), -32602, "params.id"),
    (_call("tasks/get", {"id": None}), -32602, "params.id"),
    (_call("tasks/cancel", {"id": {"id": "x"}}), -32602, "params.id"),
    (_call("tasks/cancel", None), -32602, "params"),
    (_call("tasks/resubscribe", {}), -32602, "params.id"),
    (_call("tasks/get", {"id": "x", "historyLength": "all"}), -32602, "historyLength"),
    ({**_call("tasks/get", {"id": "x"}), "id": [1]}, -32600, "id"),
    (_call("tasks/nope", {"id": "x"}), -32601, "not found"),
    (_call("tasks/get", {"id": "x" * 400_000}), -32001, "not found"),
    (_call("tasks/cancel", {"id": "é" * 100_000}), -32001, "not found"),
    (_send("message/send", "yes", "y" * 400_000), -32001, "not found"),
]


async def test_malformed_task_requests_get_json_rpc_errors_and_log_none(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], ASKS, api_keys=["k1"]) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        rpc = f"{url}/a2a/solo"
        for body, code, says in BAD:
            raw = body if isinstance(body, str) else json.dumps(body)
            r = await http.post(
                rpc, content=raw, headers={**K1, "content-type": "application/json"}
            )
            [reply] = _data(r)
            err = reply.get("error")
            assert err is not None and err["code"] == code, (raw[:80], reply)
            assert says.lower() in err["message"].lower(), (raw[:80], err)
            assert len(r.content) < 4096, raw[:80]  # a huge id is not sent back
    assert link.questions == []
    _no_errors_logged(caplog, capfd)


def _no_false_flags(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if not (k in ("append", "lastChunk") and v is False)}


async def test_a_continued_task_replays_as_it_streamed(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], ASKS) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        rpc = f"{url}/a2a/solo"
        asked = await _task(http, rpc, "email Bob")
        link.messages = DONE
        r = await http.post(rpc, json=_send("message/stream", "yes", asked["id"]))
        live = [d["result"] for d in _data(r)]
        assert {e.get("taskId", e.get("id")) for e in live} == {asked["id"]}
        assert live[-1]["status"]["state"] == "completed"
        # a reader resuming the reply (the task id finds its latest reply) after its first event
        r = await http.get(
            f"{url}/v1/stream", headers={"last-event-id": f"a2a-task:{asked['id']}:0"}
        )
        replay = [d["result"] for d in _data(r)]
    # the same events (a2a-sdk's 0.3 layer writes a false append / lastChunk out)
    assert replay == [_no_false_flags(e) for e in live]
    # the artifact the answer added is new, the draft's is not sent again
    ids = [e["artifact"]["artifactId"] for e in replay if e.get("kind") == "artifact-update"]
    assert ids and all(i not in {a["artifactId"] for a in asked["artifacts"]} for i in ids)


async def test_another_key_cannot_replay_stop_or_read_a_tasks_reply(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], ASKS, api_keys=["k1", "k2"]) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        rpc = f"{url}/a2a/solo"
        tid = (await _task(http, rpc, "email Bob", headers=K1))["id"]
        alias = f"a2a-task:{tid}"
        resume = {"last-event-id": f"{alias}:0"}
        for who, status in ((K2, 404), (K1, 200)):
            r = await http.get(f"{url}/v1/stream", headers={**who, **resume})
            assert r.status_code == status, r.text
            r = await http.get(f"{url}/v1/replies/{alias}", headers=who)
            assert r.status_code == status, r.text
        assert "Send it?" in (await http.get(f"{url}/v1/stream", headers={**K1, **resume})).text
        r = await http.delete(f"{url}/v1/replies/{alias}", headers=K2)
        assert r.status_code == 404 and "unknown_reply" in r.text
        # the question is still open for its caller
        link.messages = DONE
        done = await _result(http, rpc, _send("message/send", "yes", tid), headers=K1)
        assert done["status"]["state"] == "completed"


async def test_new_tasks_sent_at_once_get_the_room_there_is_and_no_more(tmp_path: Path) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], ASKS, max_tasks_per_key=2) as (url, link),
        httpx.AsyncClient(timeout=30) as http,
    ):
        rpc = f"{url}/a2a/solo"
        sent = await asyncio.gather(
            *(http.post(rpc, json=_send("message/send", f"q{i}")) for i in range(6))
        )
        replies = [_data(r)[0] for r in sent]
    states = sorted(
        r["result"]["status"]["state"] if "result" in r else str(r["error"]["code"])
        for r in replies
    )
    assert states == ["-32000"] * 4 + ["input-required"] * 2, replies
    assert len(link.questions) == 2


@pytest.mark.parametrize("field", ["max_tasks_per_key", "max_tasks"])
@pytest.mark.parametrize("value", [0, -3])
def test_the_task_caps_must_be_at_least_one(field: str, value: int) -> None:
    config = GatewayConfig()
    setattr(config, field, value)
    flag = "--" + field.replace("_", "-")
    with pytest.raises(ValueError, match=f"{flag} must be at least 1"):
        config.check()
    setattr(config, field, 1)
    config.check()


async def test_list_tasks_pages_filters_and_refuses_what_it_cannot_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    v1 = {**K1, "A2A-Version": "1.0"}
    async with (
        serve_gateway(tmp_path, ["solo"], ASKS, api_keys=["k1"]) as (url, _),
        httpx.AsyncClient(timeout=30) as http,
    ):
        rpc = f"{url}/a2a/solo"
        made = [(await _task(http, rpc, f"ask {n}", headers=K1))["id"] for n in range(3)]
        first = await _result(http, rpc, _call("ListTasks", {"pageSize": 2}), headers=v1)
        assert [t["id"] for t in first["tasks"]] == made[::-1][:2]  # most recent first
        assert first["totalSize"] == 3 and first["nextPageToken"]
        rest = await _result(
            http, rpc, _call("ListTasks", {"pageToken": first["nextPageToken"]}), headers=v1
        )
        assert [t["id"] for t in rest["tasks"]] == made[:1] and not rest.get("nextPageToken")
        waiting = await _result(
            http, rpc, _call("ListTasks", {"status": "TASK_STATE_INPUT_REQUIRED"}), headers=v1
        )
        assert sorted(t["id"] for t in waiting["tasks"]) == sorted(made)
        done = await _result(
            http, rpc, _call("ListTasks", {"status": "TASK_STATE_COMPLETED"}), headers=v1
        )
        assert done.get("tasks", []) == []
        for params in ({"pageToken": "not-ours"}, {"status": "TASK_STATE_NOPE"}):
            err = await _error(http, rpc, _call("ListTasks", params), headers=v1)
            assert err["code"] == -32602, (params, err)
    _no_errors_logged(caplog, capfd)
