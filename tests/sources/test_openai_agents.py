"""OpenAI Agents SDK agents on OpenAIChatCompletionsModel against a local replay server."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import pytest

pytest.importorskip("agents")

from openai import AsyncOpenAI
from source_helpers import block_starts, of_type, request, run, stream_end
from sse_replay import Script, SSEServer, chat_frames, serve

from agent_stream.message import Message
from agent_stream.sources import responder_for
from agent_stream.sources.openai_agents import nested_events, responder
from agent_stream.writer import StreamWriter
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)

set_tracing_disabled(True)


@pytest.fixture
async def server(request: pytest.FixtureRequest) -> AsyncIterator[SSEServer]:
    async for s in serve(request.param):
        yield s


def model(srv: SSEServer) -> OpenAIChatCompletionsModel:
    return OpenAIChatCompletionsModel(
        model="gpt-test",
        openai_client=AsyncOpenAI(base_url=srv.url + "/v1", api_key="x", max_retries=0),
    )


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


WEATHER = [
    chat_frames(
        calls=(
            ("call_1", "get_weather", '{"city": "Paris"}'),
            ("call_2", "get_weather", '{"city": "Rome"}'),
        ),
        usage=(12, 6),
    ),
    chat_frames(text="Sunny in both.", usage=(40, 4)),
]


@pytest.mark.parametrize("server", [WEATHER * 2], indirect=True)
async def test_transcript_equals_the_run_result(server: SSEServer) -> None:
    agent = Agent(name="weather", model=model(server), tools=[get_weather])
    msgs, t = await run(responder_for(agent), request("Weather?"))
    result = Runner.run_streamed(agent, "Weather?")  # the same script, run by the SDK itself
    async for _ in result.stream_events():
        pass
    calls = [i.raw_item for i in result.new_items if type(i).__name__ == "ToolCallItem"]
    outputs = [i for i in result.new_items if type(i).__name__ == "ToolCallOutputItem"]
    assert t.text() == result.final_output
    assert [
        (c.props["id"], c.props["name"], json.loads(c.props["arguments"]))
        for c in of_type(t, "tool_call")
    ] == [(c.call_id, c.name, json.loads(c.arguments)) for c in calls]
    assert [
        (r.props["call_id"], r.props["name"], r.props["content"]) for r in of_type(t, "tool_result")
    ] == [(o.raw_item["call_id"], "get_weather", o.output) for o in outputs]
    assert [b["label"] for b in block_starts(msgs)] == ["weather", "weather"]
    u = stream_end(msgs)["usage"]
    usage = result.context_wrapper.usage
    assert (u["prompt_tokens"], u["completion_tokens"], u["total_tokens"]) == (
        usage.input_tokens,
        usage.output_tokens,
        usage.total_tokens,
    )


@pytest.mark.parametrize(
    "server",
    [
        [
            chat_frames(calls=(("call_h", "transfer_to_french", "{}"),)),
            chat_frames(text="Bonjour, il fait beau."),
        ]
    ],
    indirect=True,
)
async def test_handoff_is_a_nested_agent_block(server: SSEServer) -> None:
    french = Agent(name="french", model=model(server))
    triage = Agent(name="triage", model=model(server), handoffs=[french])
    msgs, t = await run(responder(triage), request("Bonjour?"))
    starts = block_starts(msgs)
    assert [(b["type"], b["label"]) for b in starts] == [
        ("llm", "triage"),
        ("agent", "french"),
        ("llm", "french"),
    ]
    assert starts[1]["agent_name"] == "french"
    assert starts[1]["parent_block_id"] == starts[0]["block_id"]
    assert starts[2]["parent_block_id"] == starts[1]["block_id"]
    assert t.text() == "Bonjour, il fait beau."
    [handoff] = of_type(t, "tool_result")
    assert handoff.props["call_id"] == "call_h" and handoff.props["name"] == "transfer_to_french"


NESTED = [
    chat_frames(calls=(("call_r", "research", '{"input": "tides"}'),)),
    Script(
        chat_frames(text="High tide at six, low tide at noon.").frames, delay=0.05, done_line=True
    ),
    chat_frames(text="Tides: six and noon."),
]


@pytest.mark.parametrize("server", [NESTED], indirect=True)
async def test_agent_as_tool_streams_live_in_its_block(server: SSEServer) -> None:
    researcher = Agent(name="researcher", model=model(server))
    lead = Agent(
        name="lead",
        model=model(server),
        tools=[researcher.as_tool("research", "Research a topic", on_stream=nested_events)],
    )
    first_text: list[float] = []

    async def sink(m: Message) -> None:
        got.append(m)
        if m.type == "text" and m.delta and not first_text:
            first_text.append(time.monotonic())

    got: list[Message] = []
    async with StreamWriter(sink) as out:
        await responder(lead)(request("Tides?"), out)
    assert first_text[0] < server.finished[1]  # before the sub-agent's model had finished
    starts = block_starts(got)
    assert [(b["type"], b["label"]) for b in starts] == [
        ("llm", "lead"),
        ("agent", "researcher"),
        ("llm", "researcher"),
        ("llm", "lead"),
    ]
    assert starts[1]["parent_block_id"] == starts[0]["block_id"]
    types = [m.type for m in got if not m.event]
    assert types.index("tool_result") > types.index("text")  # the sub-agent's text first
    ends = [m.event_data["block_id"] for m in got if m.event == "block_end"]
    result_at = next(i for i, m in enumerate(got) if m.type == "tool_result")
    agent_end_at = next(
        i
        for i, m in enumerate(got)
        if m.event == "block_end" and m.event_data["block_id"] == starts[1]["block_id"]
    )
    assert agent_end_at < result_at and starts[1]["block_id"] in ends


@pytest.mark.parametrize("server", [[chat_frames(text="I remember.")]], indirect=True)
async def test_history_reaches_the_input_list(server: SSEServer) -> None:
    agent = Agent(name="a", model=model(server))
    _, t = await run(
        responder(agent),
        request("and?", history=(("user", "my name is Ann"), ("assistant", "Hi Ann"))),
    )
    assert t.text() == "I remember."
    sent = [(m["role"], m["content"]) for m in server.requests[0]["messages"]]
    assert sent[-3:] == [("user", "my name is Ann"), ("assistant", "Hi Ann"), ("user", "and?")]


@pytest.mark.parametrize(
    "server", [[Script(chat_frames(text="a b c d e f g").frames, cut_after=3)]], indirect=True
)
async def test_connection_cut_mid_stream_is_an_error(server: SSEServer) -> None:
    msgs, t = await run(responder(Agent(name="a", model=model(server))), request("q"))
    assert stream_end(msgs)["status"] == "error" and of_type(t, "error")
    assert t.text() == "a b c "


@pytest.mark.parametrize(
    "server", [[chat_frames(calls=(("call_s", "slow", "{}"),))]], indirect=True
)
async def test_cancel_reaches_the_tool(server: SSEServer) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    @function_tool
    async def slow() -> str:
        """Takes long."""
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    got: list[Message] = []

    async def sink(m: Message) -> None:
        got.append(m)

    async def body() -> None:
        async with StreamWriter(sink) as out:
            await responder(Agent(name="a", model=model(server), tools=[slow]))(request("q"), out)

    task = asyncio.create_task(body())
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    await asyncio.wait_for(cancelled.wait(), 1)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert got[-1].event_data["status"] == "cancelled"


@pytest.mark.parametrize("server", [WEATHER], indirect=True)
async def test_over_real_agents(server: SSEServer) -> None:
    from inprocess_agents import Pair

    from agent_stream.uagents import StreamingChat

    pair = Pair()
    try:
        agent = Agent(name="weather", model=model(server), tools=[get_weather])
        srv = pair.add("agents sdk source server", StreamingChat(responder_for(agent)))
        client_chat = StreamingChat()
        client = pair.add("agents sdk source client", client_chat)
        reply = await client_chat.ask(client._build_context(), srv.address, "Weather?")
        t = await asyncio.wait_for(reply.wait(), 20)
        assert reply.completed and t.text() == "Sunny in both."
        assert [m.props["content"] for m in t.messages if m.type == "tool_result"] == [
            "sunny in Paris",
            "sunny in Rome",
        ]
    finally:
        await pair.close()


@pytest.mark.parametrize(
    "server", [[chat_frames(text=f"answer {i}") for i in range(3)]], indirect=True
)
async def test_three_turns_remember_over_real_agents(server: SSEServer) -> None:
    from inprocess_agents import Pair

    from agent_stream.uagents import StreamingChat

    pair = Pair()
    try:
        srv = pair.add(
            "agents sdk memory server",
            StreamingChat(responder_for(Agent(name="a", model=model(server)))),
        )
        client_chat = StreamingChat()
        client = pair.add("agents sdk memory client", client_chat)
        ctx = client._build_context()  # one context: one session
        for q in ("one", "two", "three"):
            reply = await client_chat.ask(ctx, srv.address, q)
            await asyncio.wait_for(reply.wait(), 20)
        sent = [(m["role"], m["content"]) for m in server.requests[2]["messages"]]
        assert sent == [
            ("user", "one"),
            ("assistant", "answer 0"),
            ("user", "two"),
            ("assistant", "answer 1"),
            ("user", "three"),
        ]
    finally:
        await pair.close()


@pytest.mark.parametrize("server", [NESTED], indirect=True)
async def test_agent_tool_without_on_stream_is_reported(
    server: SSEServer, caplog: pytest.LogCaptureFixture
) -> None:
    researcher = Agent(name="researcher", model=model(server))
    lead = Agent(
        name="lead", model=model(server), tools=[researcher.as_tool("research", "Research a topic")]
    )
    with caplog.at_level("WARNING", logger="agent_stream.sources"):
        _, t = await run(responder(lead), request("Tides?"))
    assert t.text() == "Tides: six and noon."
    assert not [b for b in t.blocks if b.type == "agent"]
    assert "agent tool 'research' not mapped" in caplog.text
    assert "on_stream=nested_events" in caplog.text


RAN: list[str] = []


@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    RAN.append(path)
    return f"deleted {path}"


APPROVAL = [
    chat_frames(calls=(("call_9", "delete_file", '{"path": "a.txt"}'),), usage=(5, 3)),
    chat_frames(text="Done.", usage=(9, 2)),
]


@pytest.mark.parametrize("server", [APPROVAL], indirect=True)
async def test_a_call_waiting_for_approval_asks_and_a_yes_resumes_it(server: SSEServer) -> None:
    RAN.clear()
    respond = responder(Agent(name="ops", model=model(server), tools=[delete_file]))
    msgs, t = await run(respond, request("delete a.txt", session="ops1"))
    [asked] = of_type(t, "user_input")
    assert (asked.props["kind"], asked.props["call_id"], asked.props["name"]) == (
        "approval",
        "call_9",
        "delete_file",
    )
    assert json.loads(asked.props["arguments"]) == {"path": "a.txt"}
    assert stream_end(msgs)["status"] == "completed" and RAN == []
    assert [b["model"] for b in block_starts(msgs)] == ["gpt-test"]  # gen_ai.request.model
    msgs, t = await run(respond, request("yes", session="ops1"))
    assert RAN == ["a.txt"]
    [result] = of_type(t, "tool_result")
    assert (result.props["call_id"], result.props["content"]) == ("call_9", "deleted a.txt")
    assert t.text() == "Done." and stream_end(msgs)["status"] == "completed"


@pytest.mark.parametrize("server", [[*APPROVAL, APPROVAL[1]]], indirect=True)
async def test_another_senders_yes_in_the_same_session_resumes_nothing(server: SSEServer) -> None:
    RAN.clear()
    respond = responder(Agent(name="ops", model=model(server), tools=[delete_file]))
    await run(respond, request("delete a.txt", session="ops3", sender="agent1qowner"))
    _, t = await run(respond, request("yes", session="ops3", sender="agent1qother"))
    assert RAN == [] and not of_type(t, "tool_result")
    _, t = await run(respond, request("yes", session="ops3", sender="agent1qowner"))
    assert RAN == ["a.txt"]


@pytest.mark.parametrize("server", [APPROVAL], indirect=True)
async def test_anything_but_yes_rejects_the_call_with_its_text(server: SSEServer) -> None:
    RAN.clear()
    respond = responder(Agent(name="ops", model=model(server), tools=[delete_file]))
    await run(respond, request("delete a.txt", session="ops2"))
    _, t = await run(respond, request("no", session="ops2"))
    assert RAN == []
    [result] = of_type(t, "tool_result")
    assert result.props["content"] == "The user refused: no"
    # what the model was told when the run went on
    sent = server.requests[-1]["messages"]
    assert any(m.get("content") == "The user refused: no" for m in sent if m["role"] == "tool")
