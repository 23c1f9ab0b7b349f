"""ChatEncoder: round trips, every stream ends, chunk counts."""

from __future__ import annotations

import asyncio

import pytest
from chat_fixtures import (
    TOKENS,
    decode,
    delta,
    encode,
    hierarchical_reply,
    items,
    msg_end,
    open_at_once,
    plain,
    run,
    via_json,
    view,
)
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndSessionContent,
    EndStreamContent,
    MetadataContent,
    ResourceContent,
    StartStreamContent,
    TextContent,
)

from agent_stream.adapters.chat import ChatDecoder, ChatEncoder
from agent_stream.adapters.chat.messages import plain_append
from agent_stream.assemble import assemble
from agent_stream.message import Message as M
from agent_stream.message import action, tool_call
from agent_stream.writer import StreamWriter


@pytest.mark.parametrize("tagged", [False, True])
def test_writer_stream_round_trips_to_the_same_transcript_except_withheld_thinking(
    tagged: bool,
) -> None:
    msgs = run(hierarchical_reply)
    chats = encode(msgs, tagged=tagged)
    decoded, warnings = decode(via_json(chats))
    assert warnings == []
    want = {k: v for k, v in view(assemble(msgs)).items() if v["type"] != "thinking"}
    got = view(assemble(decoded))
    assert got == want
    assert all(v["status"] == "completed" for v in got.values())
    assert assemble(decoded).finished


def test_thinking_is_not_sent_at_all_by_default() -> None:
    chats = encode(run(hierarchical_reply))
    wire = "".join(c.json() for c in chats)
    assert "secrets" not in wire and "Hidden" not in wire and "thinking" not in wire


def test_reasoning_channel_sends_thinking_as_metadata_only() -> None:
    msgs = run(hierarchical_reply)
    chats = encode(msgs, channels={"reasoning"})
    assert "Hidden" not in plain(chats)
    assert "Hidden reasoning" in "".join(c.json() for c in chats)
    decoded, warnings = decode(via_json(chats))
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_plain_peer_reads_exactly_the_answer_text() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            await b.send(tool_call(id="c1", name="search", arguments="{}"))
            async with b.message("thinking") as m:
                await m.append("private")
            async with b.message() as m:
                for tok in TOKENS:
                    await m.append(tok + " ")
            await b.send(action("open", {"x": 1}))
            await b.text("Second message.")

    msgs = run(body)
    chats = encode(msgs)
    assert plain(chats) == assemble(msgs).text()


def test_every_chat_message_is_valid_for_uagents_with_string_metadata_and_no_empty_ids() -> None:
    chats = encode(run(hierarchical_reply), channels={"reasoning"}, session=True)
    for c in chats:
        again = ChatMessage.parse_raw(c.json())  # what the recipient's uagents does
        assert again.json() == c.json()
        for item in c.content:
            if isinstance(item, MetadataContent):
                for k, v in item.metadata.items():
                    assert isinstance(v, str)
                    assert v not in ("", "None", "null"), k


def test_ids_travel_only_in_metadata() -> None:
    for item in items(encode(run(hierarchical_reply))):
        if isinstance(item, TextContent):
            assert "M3" not in item.text and "agent_stream" not in item.text
        else:
            assert isinstance(
                item,
                (
                    MetadataContent,
                    StartStreamContent,
                    EndStreamContent,
                    ResourceContent,
                    EndSessionContent,
                ),
            )


def test_close_ends_open_streams_flushes_and_sends_stream_end_once() -> None:
    enc = ChatEncoder("conv")
    out = enc.feed(delta("Half a sent", "M1"), 0.0)
    assert not enc.finished
    out += enc.close(0.0, status="error", error="boom")
    assert enc.finished and enc.close(1.0) == []
    assert open_at_once(out) == 1
    assert plain(out) == "Half a sent\n\nError: boom"
    decoded, _ = decode(out)
    t = assemble(decoded)
    assert t.finished and t.status == "error"
    assert t.get(None, "M1").props == {"content": "Half a sent"}  # type: ignore[union-attr]


def test_raising_responder_ends_its_streams_and_delivers_the_error() -> None:
    msgs: list[M] = []

    async def sink(m: M) -> None:
        msgs.append(m)

    async def body() -> None:
        async with StreamWriter(sink) as out, out.block("llm") as b, b.message() as m:
            await m.append("Partial answer. ")
            raise RuntimeError("model went away")

    with pytest.raises(RuntimeError):
        asyncio.run(body())
    chats = encode(msgs, close=False)
    assert open_at_once(chats) == 1
    assert plain(chats) == "Partial answer. \n\nError: RuntimeError: model went away"
    last = chats[-1]
    assert any(
        "stream_end" in i.metadata.get("props", "")
        for i in last.content
        if isinstance(i, MetadataContent)
    )
    decoded, warnings = decode(chats)
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(msgs))
    assert assemble(decoded).status == "error"


def test_session_reply_ends_with_end_session_and_stream_end() -> None:
    chats = encode(run(hierarchical_reply), session=True)
    last = chats[-1].content
    assert isinstance(last[-1], EndSessionContent)
    assert sum(isinstance(i, EndSessionContent) for i in items(chats)) == 1
    assert any(
        '"stream_end"' in i.metadata.get("props", "")
        for i in last
        if isinstance(i, MetadataContent)
    )


def test_end_streams_ends_streams_but_not_the_reply() -> None:
    chats = encode([delta("No end in sight", "M1")], close=False)
    assert open_at_once(chats) == 1
    decoded, warnings = decode(chats)
    assert warnings == []
    t = assemble(decoded)
    assert not t.finished and t.get(None, "M1").status == "streaming"  # type: ignore[union-attr]


def test_message_end_chunk_count_is_rewritten_to_what_the_decoder_rebuilds() -> None:
    msgs = [delta(tok + " ", "M1") for tok in TOKENS] + [msg_end("M1", len(TOKENS))]
    chats = encode(msgs)
    decoded, _ = decode(chats)
    st = assemble(decoded).get(None, "M1")
    assert st is not None and st.status == "completed"
    assert st.chunk_count < len(TOKENS)  # rebuilt from sentence chunks, not tokens


def test_a_lost_chat_message_shows_as_incomplete() -> None:
    msgs = [delta(tok + " ", "M1") for tok in TOKENS] + [msg_end("M1", len(TOKENS))]
    chats = encode(msgs, chunker={"min_chars": 10, "max_chars": 60})
    middle = [
        i
        for i, c in enumerate(chats)
        if any(isinstance(x, TextContent) for x in c.content)
        and not any(isinstance(x, (StartStreamContent, EndStreamContent)) for x in c.content)
    ]
    assert middle
    del chats[middle[0]]
    decoded, warnings = decode(chats, dec=ChatDecoder(reorder_window=0))
    assert [w.code for w in warnings] == ["gap"]
    t = assemble(decoded)
    assert t.get(None, "M1").status == "incomplete"  # type: ignore[union-attr]
    assert [w.code for w in t.warnings] == ["chunks_lost"]


def test_a_message_already_short_of_chunks_stays_incomplete() -> None:
    msgs = [delta("One. ", "M1"), delta("Two.", "M1"), msg_end("M1", 5)]
    assert assemble(msgs).get(None, "M1").status == "incomplete"  # type: ignore[union-attr]
    decoded, _ = decode(encode(msgs))
    assert assemble(decoded).get(None, "M1").status == "incomplete"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("fields", "want"),
    [
        ({"delta": True, "props": {"content": "tok"}}, "tok"),
        ({"delta": True, "props": {"content": ""}}, ""),
        ({"delta": False, "props": {"content": "tok"}}, None),
        ({"delta": True, "props": {"content": "tok", "done": True}}, None),
        ({"delta": True, "props": {"content": 3}}, None),
        ({"delta": True, "props": {"content": "tok"}, "delta_action": "append"}, None),
        ({"delta": True, "props": {"content": "tok"}, "delta_path": "content"}, None),
        ({"delta": True, "props": {"content": "tok"}, "type_change": True}, None),
        ({"delta": True}, None),
    ],
)
def test_plain_append_is_the_one_form_a_writer_gives_each_token(
    fields: dict[str, object], want: str | None
) -> None:
    """The encoder's per-token path and the decoder's kept text both read only this form."""
    msg = M.model_validate({"message_id": "m1", "type": "text", **fields})
    assert plain_append(msg) == want
