"""Folding on the tagged wire: a message complete when its ChatMessage is cut goes as one group.

Property: a stream sent folded and unfolded (same Messages, same times, same cuts) decodes to the
same Messages, so every client wire writes the same bytes. Units: what folds and what does not,
who gets folds (an asker whose tag says ``fold=1``), and hostile folded groups.
"""

from __future__ import annotations

from typing import Any

import pytest
from chat_streams import CHUNKERS, hierarchical_streams, with_extra
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    MetadataContent,
    StartStreamContent,
    TextContent,
)

from agent_stream.adapters import registry
from agent_stream.adapters.chat import (
    TAG_KEY,
    ChatDecoder,
    ChatEncoder,
    DecoderLimits,
    coalesce,
    parse_chat,
    request_tags,
)
from agent_stream.adapters.chat.fold import _SWAP_QUOTES, MAX_FOLD_PARTS, lean_parts
from agent_stream.adapters.chat.incoming import read_chat
from agent_stream.adapters.chat.wire import OP_FOLD, chat_of
from agent_stream.message import (
    BLOCK_END,
    BLOCK_START,
    MESSAGE_END,
    MESSAGE_START,
    STREAM_END,
    BlockEndData,
    BlockStartData,
    Message,
    MessageEndData,
    MessageStartData,
    StreamEndData,
    lifecycle,
)


def _encode(
    msgs: list[Message],
    steps: list[float],
    *,
    fold: bool,
    tagged: bool = True,
    reasoning: bool = True,
    chunker: dict[str, Any] | None = None,
    meta_delay: float = 0.1,
) -> list[ChatMessage]:
    enc = ChatEncoder(
        "conversation-1",
        tagged=tagged,
        channels={"reasoning"} if reasoning else None,
        chunker=chunker,
        meta_delay=meta_delay,
        fold=fold,
        deterministic=True,
    )
    chats: list[ChatMessage] = []
    now = 100.0
    for i, m in enumerate(msgs):
        now += steps[i % len(steps)]
        d = enc.next_deadline
        if d is not None and d <= now:
            chats += enc.poll(now)
        chats += enc.feed(m, now)
    chats += enc.end_streams(now + 1)
    return chats


def _decode(chats: list[ChatMessage]) -> list[Message]:
    dec = ChatDecoder()
    out: list[Message] = []
    for c in chats:
        out += dec.feed("agent1peer", c, 1000.0)
    out += dec.close()
    assert dec.drain_warnings() == []
    return out


def _folds(chats: list[ChatMessage]) -> int:
    return sum(
        1
        for c in chats
        for item in c.content
        if isinstance(item, MetadataContent) and item.metadata.get("op") == OP_FOLD
    )


def _client_wires(msgs: list[Message]) -> dict[str, list[str]]:
    """What each client wire (every registry wire but the chat wire itself) writes."""
    out: dict[str, list[str]] = {}
    for wire in registry.wires():
        if wire.name == "chat":
            continue
        enc = wire.make_encoder()
        frame = wire.frame()
        objs: list[Any] = []
        for m in msgs:
            objs += enc.feed(m)
        objs += enc.close()
        out[wire.name] = [frame(o) for o in objs]
    return out


def _normalised(lines: list[str]) -> list[str]:
    """Wire text with the values that differ on every run (ids, clocks) blanked."""
    import re

    uuid_re = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    num_re = re.compile(r'("(?:created|timestamp|createdAt)"\s*:\s*)"?[0-9T:.\-+Z]+"?')
    return [num_re.sub(r"\1 0", uuid_re.sub("U", line)) for line in lines]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=hierarchical_streams(),
    reasoning=st.booleans(),
    steps=st.lists(st.sampled_from([0.0, 0.0, 0.01, 0.3]), min_size=1, max_size=8),
    chunker=CHUNKERS,
    meta_delay=st.sampled_from([0.0, 0.1, 1.0]),
    json_wire=st.booleans(),
    runs=st.lists(st.integers(1, 4), max_size=10),
    extra=st.booleans(),
)
def test_a_stream_sent_folded_and_unfolded_decodes_to_the_same_messages_and_client_wire_bytes(
    data: tuple[list[Message], set[Any]],
    reasoning: bool,
    steps: list[float],
    chunker: dict[str, Any] | None,
    meta_delay: float,
    json_wire: bool,
    runs: list[int],
    extra: bool,
) -> None:
    msgs, _ = data
    if extra:
        msgs = with_extra(msgs)
    opts: dict[str, Any] = {"reasoning": reasoning, "chunker": chunker, "meta_delay": meta_delay}
    folded = _encode(msgs, steps, fold=True, **opts)
    unfolded = _encode(msgs, steps, fold=False, **opts)
    assert len(folded) == len(unfolded)  # folding never changes when a ChatMessage goes
    if json_wire:
        folded = [parse_chat(c.json()) for c in folded]
    wire: list[ChatMessage] = []
    for n in runs:  # coalesced as a slow transport would
        if folded:
            wire.append(coalesce(folded[:n]))
            folded = folded[n:]
    wire += folded
    a, b = _decode(wire), _decode(unfolded)
    assert [m.model_dump() for m in a] == [m.model_dump() for m in b]
    wa, wb = _client_wires(a), _client_wires(b)
    assert {k: _normalised(v) for k, v in wa.items()} == {k: _normalised(v) for k, v in wb.items()}


def _tool_step(bid: str = "B1") -> list[Message]:
    ids = {"message_id": "M2", "block_id": bid}
    return [
        lifecycle(BLOCK_START, BlockStartData(block_id=bid, type="tool"), block_id=bid),
        lifecycle(MESSAGE_START, MessageStartData(message_id="M2", type="loading"), **ids),
        Message(type="loading", props={"message": "Searching…"}, **ids),
        Message(type="loading", props={"done": True}, delta=True, delta_action="merge", **ids),
        lifecycle(MESSAGE_END, MessageEndData(message_id="M2", type="loading"), **ids),
        lifecycle(BLOCK_END, BlockEndData(block_id=bid), block_id=bid),
    ]


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + words[-1:]


def _answer(text: str = "Hello there. This is the whole answer.") -> list[Message]:
    ids = {"message_id": "M3", "block_id": "B2"}
    return [
        lifecycle(MESSAGE_START, MessageStartData(message_id="M3", type="text"), **ids),
        *[Message(type="text", props={"content": w}, delta=True, **ids) for w in _words(text)],
        lifecycle(
            MESSAGE_END,
            MessageEndData(message_id="M3", type="text", chunk_count=len(_words(text))),
            **ids,
        ),
        lifecycle(STREAM_END, StreamEndData(status="completed")),
    ]


def test_a_message_complete_at_cut_time_is_one_group_with_its_text_as_text_content() -> None:
    msgs = [*_tool_step(), *_answer()]
    big = {"min_chars": 500, "max_chars": 1000, "first_chars": None}
    chats = _encode(msgs, [0.0], fold=True, chunker=big)
    assert len(chats) == 2  # the answer's end goes at once; the stream_end after it
    items = chats[0].content
    folds = [i for i in items if isinstance(i, MetadataContent) and i.metadata.get("op") == "fold"]
    # the tool step's metadata (block_start, the whole loading message...) is one group without
    # ids; the answer is one group with its ids once, its text as TextContent after it
    assert [f.metadata.get("message_id") for f in folds] == [None, "M3"]
    assert '"message_id":"M2"' in folds[0].metadata["parts"]
    assert not any(isinstance(i, StartStreamContent) for i in items)  # no chat stream to open
    texts = [i.text for i in items if isinstance(i, TextContent)]
    assert "".join(texts) == "Hello there. This is the whole answer."
    assert _decode(chats) == _decode(_encode(msgs, [0.0], fold=False, chunker=big))


def test_a_message_still_streaming_at_cut_time_goes_as_today() -> None:
    msgs = _answer("One. " * 60)
    chats = _encode(msgs, [0.05], fold=True, chunker={"max_delay": 0.1})
    assert len(chats) > 2
    assert _folds(chats) == 0
    unfolded = _encode(msgs, [0.05], fold=False, chunker={"max_delay": 0.1})
    assert len(chats) == len(unfolded)
    assert _decode(chats) == _decode(unfolded)


def test_folding_never_makes_the_encoder_wait() -> None:
    # the start goes at once with its first text: nothing holds it back to fold it later
    msgs = _answer("First sentence is here. " * 10)
    enc = ChatEncoder("c", tagged=True, fold=True, chunker={"max_delay": 0.2})
    first = []
    for m in msgs[:4]:
        first += enc.feed(m, 0.0)
    first += enc.poll(0.25)
    assert first and any(isinstance(i, TextContent) for c in first for i in c.content)


def test_plain_and_old_tagged_askers_get_the_unfolded_form() -> None:
    msgs = [*_tool_step(), *_answer()]
    for tagged in (False, True):
        chats = _encode(msgs, [0.0], fold=False, tagged=tagged)
        assert _folds(chats) == 0
    # fold=True is ignored for a plain asker: it could not read it
    plain = _encode(msgs, [0.0], fold=True, tagged=False)
    assert _folds(plain) == 0
    assert [c.json() for c in plain] == [
        c.json() for c in _encode(msgs, [0.0], fold=False, tagged=False)
    ]


def test_an_asker_says_in_its_tag_that_it_reads_folds() -> None:
    assert read_chat(ChatMessage(content=[TextContent(text="q"), request_tags()])).reads_folds
    old = MetadataContent(metadata={TAG_KEY: "1", "accept": "tags", "acks": "many"})
    assert not read_chat(ChatMessage(content=[TextContent(text="q"), old])).reads_folds
    assert not read_chat(ChatMessage(content=[TextContent(text="q")])).reads_folds


def _hostile(parts: str, texts: tuple[str, ...] = (), message_id: str | None = "M1") -> ChatMessage:
    md = {TAG_KEY: "1", "op": "fold", "parts": parts, "seq": "1", "conversation": "c"}
    if message_id is not None:
        md["message_id"] = message_id
    return chat_of([MetadataContent(metadata=md), *[TextContent(text=t) for t in texts]])


@pytest.mark.parametrize(
    "parts",
    [
        "not json",
        "{}",
        "[]",
        "[1]",
        '[{"type": 3}]',
        '[{"type":"event","props":[1]}]',
        '["text"]',  # a text part without its text
        "[" + ",".join(['"text"'] * (MAX_FOLD_PARTS + 1)) + "]",
        '["' + "x" * 5000 + '"]',
    ],
)
def test_a_bad_folded_group_is_a_warning_never_a_traceback(parts: str) -> None:
    dec = ChatDecoder()
    dec.feed("agent1bad", _hostile(parts, ("a",) if "x" * 100 in parts else ()), 0.0)
    warnings = dec.drain_warnings()
    assert warnings and all(w.code == "bad_metadata" for w in warnings)


def test_a_text_part_of_a_group_without_ids_is_a_warning() -> None:
    dec = ChatDecoder()
    assert dec.feed("agent1bad", _hostile('["text"]', ("a",), message_id=None), 0.0) == []
    assert [w.code for w in dec.drain_warnings()] == ["bad_metadata"]


def test_a_folded_message_counts_against_the_same_caps_as_its_stream() -> None:
    dec = ChatDecoder(max_stream_bytes=10)
    out = dec.feed("agent1big", _hostile('["text","text"]', ("12345678", "12345678")), 0.0)
    assert [m.props for m in out] == [{"content": "12345678"}]
    assert [w.code for w in dec.drain_warnings()] == ["stream_too_large"]


def _paced_answerwith_extra() -> list[Message]:
    return with_extra(_answer("A sentence that streams. " * 20))


def test_a_streamed_message_end_leaves_its_text_out_and_the_decoder_puts_it_back() -> None:
    msgs = _paced_answerwith_extra()
    chats = _encode(msgs, [0.05], fold=True, chunker={"max_delay": 0.1})
    assert _folds(chats) == 0  # it streamed: the end comes in a ChatMessage of its own
    text = "A sentence that streams. " * 20
    [end_group] = [
        i.metadata
        for c in chats
        for i in c.content
        if '"message_end"' in i.dict().get("metadata", {}).get("props", "")
    ]
    assert end_group["extra"] == "stream" and text not in end_group["props"]  # once, not twice
    unfolded = _encode(msgs, [0.05], fold=False, chunker={"max_delay": 0.1})
    assert text in "".join(c.json() for c in unfolded)
    decoded = _decode(chats)
    assert decoded == _decode(unfolded)
    [end] = [m for m in decoded if m.event == MESSAGE_END]
    assert end.event_data["extra"] == {"content": text}


def test_past_max_kept_bytes_total_the_text_is_not_kept_and_the_end_goes_without_it() -> None:
    chats = _encode(_paced_answerwith_extra(), [0.05], fold=True, chunker={"max_delay": 0.1})
    dec = ChatDecoder(limits=DecoderLimits(max_kept_bytes_total=200))
    out: list[Message] = []
    for c in chats:
        out += dec.feed("agent1peer", c, 0.0)
    [end] = [m for m in out if m.event == MESSAGE_END]
    assert "extra" not in end.event_data
    assert "".join(m.props["content"] for m in out if m.type == "text") == (
        "A sentence that streams. " * 20
    )
    assert [w.code for w in dec.drain_warnings()] == ["message_too_large"]
    assert dec._state.kept_bytes == 0  # released when the stream ended


def _relay_hop(msgs: list[Message], steps: list[float], fold: bool) -> list[Message]:
    """A relaying agent between the sub-agent and the asker: decode the sub-reply, re-identify
    it under a relay block (agent_stream.relay), encode it again for the asker, decode it."""
    from agent_stream.ids import IdGenerator
    from agent_stream.relay import Reidentifier

    relayed: list[Message] = []
    reid = Reidentifier(IdGenerator(), block_id="R1")
    for m in _decode(_encode(msgs, steps, fold=fold)):
        relayed += reid.feed(m)
    relayed += reid.close("completed")
    return _decode(_encode(relayed, steps, fold=fold))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=hierarchical_streams(),
    steps=st.lists(st.sampled_from([0.0, 0.0, 0.01, 0.3]), min_size=1, max_size=8),
    extra=st.booleans(),
)
def test_a_relayed_reply_folded_on_both_hops_reaches_the_asker_as_the_unfolded_one(
    data: tuple[list[Message], set[Any]], steps: list[float], extra: bool
) -> None:
    msgs = with_extra(data[0]) if extra else data[0]
    a, b = _relay_hop(msgs, steps, True), _relay_hop(msgs, steps, False)
    assert [m.model_dump() for m in a] == [m.model_dump() for m in b]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(['"', "'", "\0", "a", "\\", "{", "é", "中"])) | st.text())
def test_lean_parts_swaps_exactly_the_quotes_whatever_the_text(text: str) -> None:
    """Its three replaces stand for the translate table, a peer's NUL characters included."""
    assert lean_parts(text) == text.translate(_SWAP_QUOTES)
    assert lean_parts(lean_parts(text)) == text
