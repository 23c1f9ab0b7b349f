"""The lean tagged wire (an asker whose tag says ``lean=1``): text the chunker released gathers
into fewer ChatMessages, within the gather window (``lean_gather``) after its oldest character,
and decodes to the same Messages.

Properties: a stream sent lean and sent in today's forms (unfolded, folded) decodes to the same
Messages, transcript and client wire bytes, even coalesced by a slow transport; the lean form
sends no text later than the later of today's send and its bound (its oldest character's
arrival + the gather window, or the chunker's deadline when later; a message's first chunk: the
chunker's deadline), no message's first text later than today, and never more ChatMessages.
Sent cut (an asker that also says ``cuts=1``), the lean form is the same ChatMessages, at the
same times, once each group's one TextContent is cut back by its ``cuts``, byte for byte.
Units: who gets the lean form, what gathers, what never waits, cut text and bad ``cuts``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from chat_streams import CHUNKERS, hierarchical_streams, with_extra
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from uagents_core.contrib.protocols.chat import ChatMessage, MetadataContent, TextContent

from agent_stream.adapters import registry
from agent_stream.adapters.chat import (
    CHAT_CHUNKER_DEFAULTS,
    LEAN_GATHER,
    TAG_KEY,
    ChatDecoder,
    ChatEncoder,
    DecoderLimits,
    coalesce,
    parse_chat,
    request_tags,
)
from agent_stream.adapters.chat.fold import expand
from agent_stream.adapters.chat.incoming import read_chat
from agent_stream.adapters.chat.wire import chat_of, uuid4_from
from agent_stream.assemble import assemble
from agent_stream.chunking import TextChunker
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

T0 = 100.0


def _encode(
    msgs: list[Message],
    steps: list[float],
    *,
    lean: bool = False,
    cuts: bool = False,
    fold: bool = False,
    tagged: bool = True,
    reasoning: bool = True,
    chunker: dict[str, Any] | None = None,
    meta_delay: float = 0.1,
    lean_gather: float = LEAN_GATHER,
) -> list[tuple[float, ChatMessage]]:
    """Each ChatMessage and when it went, the encoder polled at every deadline it names (as the
    responder's timer does), the Messages fed ``steps`` apart."""
    enc = ChatEncoder(
        "conversation-1",
        tagged=tagged,
        channels={"reasoning"} if reasoning else None,
        chunker=chunker,
        meta_delay=meta_delay,
        fold=fold,
        lean=lean,
        cuts=cuts,
        lean_gather=lean_gather,
        deterministic=True,
    )
    out: list[tuple[float, ChatMessage]] = []
    now = T0

    def poll_until(nxt: float) -> None:
        nonlocal now
        d = enc.next_deadline
        while d is not None and d <= nxt:
            now = max(now, d)
            out.extend((now, c) for c in enc.poll(now))
            d2 = enc.next_deadline
            if d2 is not None and d2 <= d:
                break  # nothing more comes of polling at this time
            d = d2

    for i, m in enumerate(msgs):
        nxt = now + steps[i % len(steps)]
        poll_until(nxt)
        now = nxt
        out += [(now, c) for c in enc.feed(m, now)]
    end = now + 1
    poll_until(end)  # the deadlines of what is held after the last Message, too
    now = end
    out += [(now, c) for c in enc.end_streams(now)]
    return out


def _uncut(chat: ChatMessage) -> ChatMessage:
    """``chat`` as an asker without ``cuts=1`` gets it: each chunk group's ``cuts`` left out, the
    TextContent after it cut into one per chunk (checked: positive lengths that add up)."""
    content: list[Any] = []
    cuts: list[int] | None = None
    for item in chat.content:
        if isinstance(item, MetadataContent) and "cuts" in item.metadata:
            md = dict(item.metadata)
            cuts = [int(n) for n in md.pop("cuts").split(",")]
            assert len(cuts) > 1 and all(n > 0 for n in cuts)
            item = MetadataContent.construct(type="metadata", metadata=md)
        elif isinstance(item, TextContent) and cuts is not None:
            assert sum(cuts) == len(item.text)
            at = 0
            for n in cuts:
                content.append(TextContent.construct(type="text", text=item.text[at : at + n]))
                at += n
            cuts = None
            continue
        content.append(item)
    assert cuts is None
    return ChatMessage.construct(timestamp=chat.timestamp, msg_id=chat.msg_id, content=content)


def _decode_timed(chats: list[tuple[float, ChatMessage]]) -> list[tuple[float, Message]]:
    dec = ChatDecoder()
    out: list[tuple[float, Message]] = []
    last = T0
    for t, c in chats:
        out += [(t, m) for m in dec.feed("agent1peer", c, 1000.0)]
        last = t
    out += [(last, m) for m in dec.close()]
    assert dec.drain_warnings() == []
    return out


def _decode(chats: list[ChatMessage]) -> list[Message]:
    return [m for _, m in _decode_timed([(T0, c) for c in chats])]


def _client_wires(msgs: list[Message]) -> dict[str, list[str]]:
    """What each client wire (every registry wire but the chat wire itself) writes."""
    import re

    uuid_re = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    num_re = re.compile(r'("(?:created|timestamp|createdAt)"\s*:\s*)"?[0-9T:.\-+Z]+"?')
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
        out[wire.name] = [num_re.sub(r"\1 0", uuid_re.sub("U", frame(o))) for o in objs]
    return out


def _first_text_at(chats: list[tuple[float, ChatMessage]]) -> float | None:
    for t, c in chats:
        if any(isinstance(i, TextContent) and i.text for i in c.content):
            return t
    return None


def _arrivals(msgs: list[Message], steps: list[float]) -> dict[Any, list[float]]:
    """Per message whose every content chunk is a plain string append: when each character of
    its content was fed."""
    out: dict[Any, list[float]] = {}
    bad: set[Any] = set()
    now = T0
    for i, m in enumerate(msgs):
        now += steps[i % len(steps)]
        if m.message_id is None or m.type == "event":
            continue
        key = (m.thread_id, m.message_id)
        p = m.props or {}
        if (
            m.delta
            and not m.type_change
            and m.delta_action is None
            and m.delta_path is None
            and len(p) == 1
            and isinstance(p.get("content"), str)
        ):
            out.setdefault(key, []).extend([now] * len(p["content"]))
        else:
            bad.add(key)
    return {k: v for k, v in out.items() if k not in bad}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=hierarchical_streams(),
    reasoning=st.booleans(),
    steps=st.lists(st.sampled_from([0.0, 0.0, 0.01, 0.05, 0.3]), min_size=1, max_size=8),
    chunker=CHUNKERS,
    meta_delay=st.sampled_from([0.0, 0.1, 1.0]),
    json_wire=st.booleans(),
    runs=st.lists(st.integers(1, 4), max_size=10),
    extra=st.booleans(),
    lean_gather=st.sampled_from([0.0, 0.3, LEAN_GATHER, 4.0]),
)
def test_a_stream_sent_lean_decodes_as_sent_today_no_text_later_than_its_bound(
    data: tuple[list[Message], set[Any]],
    reasoning: bool,
    steps: list[float],
    chunker: dict[str, Any] | None,
    meta_delay: float,
    json_wire: bool,
    runs: list[int],
    extra: bool,
    lean_gather: float,
) -> None:
    msgs, _ = data
    if extra:
        msgs = with_extra(msgs)
    opts: dict[str, Any] = {"reasoning": reasoning, "chunker": chunker, "meta_delay": meta_delay}
    lean = _encode(msgs, steps, lean=True, lean_gather=lean_gather, **opts)
    cut = _encode(msgs, steps, lean=True, cuts=True, lean_gather=lean_gather, **opts)
    # cut text: the lean form once each group's text is cut back by its cuts, byte for byte,
    # at the same times (a boundary lost or shifted shows here, and in the Messages below)
    assert [(t, _uncut(c).json()) for t, c in cut] == [(t, c.json()) for t, c in lean]
    folded = _encode(msgs, steps, fold=True, **opts)
    unfolded = _encode(msgs, steps, **opts)
    assert len(lean) <= len(folded) == len(unfolded)  # gathering never adds a ChatMessage
    first, today = _first_text_at(lean), _first_text_at(unfolded)
    assert (first is None) == (today is None)
    assert first is None or today is None or first <= today

    timed_lean = _decode_timed(lean)
    timed_today = _decode_timed(unfolded)
    a = [m for _, m in timed_lean]
    b = [m for _, m in timed_today]
    assert [m.model_dump() for m in a] == [m.model_dump() for m in b]
    assert _decode([c for _, c in folded]) == b

    # No text later than the later of today's send and its bound: its oldest character's
    # arrival + the gather window, or + max_delay (+ block_grace) when later; a message's
    # first chunk, the chunker's bound alone; a text message's first text, today's send.
    bounds = TextChunker(**{"min_chars": 120, "max_delay": 0.5, **(chunker or {})})
    chunker_slack = bounds.max_delay + bounds.block_grace + 1e-9
    slack = max(lean_gather, bounds.max_delay) + bounds.block_grace + 1e-9
    arrivals = _arrivals(msgs, steps)
    offsets: dict[Any, int] = {}
    shown: set[Any] = set()
    for (t_lean, m), (t_today, _) in zip(timed_lean, timed_today, strict=True):
        key = (m.thread_id, m.message_id)
        text = (m.props or {}).get("content")
        if not m.delta or key not in arrivals or not isinstance(text, str):
            continue
        at = offsets.get(key, 0)
        offsets[key] = at + len(text)
        if text and m.type in ("text", "refusal") and key not in shown:
            shown.add(key)
            assert t_lean <= t_today  # a message's first text never waits
        if text and at < len(arrivals[key]):
            first_chunk = at == 0
            assert t_lean <= max(
                t_today, arrivals[key][at] + (chunker_slack if first_chunk else slack)
            )

    # the same, ChatMessages coalesced as a slow transport would, and through JSON (cut text:
    # its lengths are the characters JSON gives back, not its escapes' or its UTF-8 bytes)
    want_wires = _client_wires(b)
    for form in (lean, cut):
        chats = [parse_chat(c.json()) if json_wire else c for _, c in form]
        wire: list[ChatMessage] = []
        for n in runs:
            if chats:
                wire.append(coalesce(chats[:n]))
                chats = chats[n:]
        wire += chats
        c = _decode(wire)
        assert [m.model_dump() for m in c] == [m.model_dump() for m in b]
        assert assemble(c).to_dict() == assemble(b).to_dict()
        assert _client_wires(c) == want_wires


def _answer(text: str, mid: str = "M1") -> list[Message]:
    ids = {"message_id": mid, "block_id": "B1"}
    words = [w + " " for w in text.split(" ")]
    return [
        lifecycle(MESSAGE_START, MessageStartData(message_id=mid, type="text"), **ids),
        *[Message(type="text", props={"content": w}, delta=True, **ids) for w in words],
        lifecycle(MESSAGE_END, MessageEndData(message_id=mid, type="text"), **ids),
        lifecycle(STREAM_END, StreamEndData(status="completed")),
    ]


def _texts(chat: ChatMessage) -> list[str]:
    return [i.text for i in chat.content if isinstance(i, TextContent)]


def test_sentences_released_early_gather_until_the_oldest_is_due() -> None:
    # short sentences: the chunker releases each as it ends (min_chars 10); lean, they wait
    # for the first one's deadline and go together, one group and its TextContent items
    msgs = _answer("Hi. " + "One more sentence here. " * 12)
    chunker = {"min_chars": 10, "max_delay": 0.5}
    lean = _encode(msgs, [0.02], lean=True, chunker=chunker)
    today = _encode(msgs, [0.02], chunker=chunker)
    assert len(lean) < len(today)
    assert _first_text_at(lean) == _first_text_at(today)  # the first text never waits
    assert _texts(lean[0][1]) == _texts(today[0][1])
    gathered = [c for _, c in lean if len(_texts(c)) > 1]
    assert gathered
    for c in gathered:  # one chunk group, its texts after it
        tags = [i for i in c.content if isinstance(i, MetadataContent) and TAG_KEY in i.metadata]
        assert [t.metadata["op"] for t in tags].count("chunk") == 1
    assert _decode([c for _, c in lean]) == _decode([c for _, c in today])


def test_with_a_gather_window_within_max_delay_a_chunk_released_at_its_deadline_goes_at_once() -> (
    None
):
    # text arriving slower than min_chars: the chunker cuts at max_delay, nothing gathers more
    # (but the last, which the message's end flushes: its stream's end waits meta_delay, as
    # metadata does, for the reply's end to go with it)
    msgs = _answer("word " * 40)
    chunker = {"min_chars": 120, "max_delay": 0.5}
    for window in (0.0, 0.5):
        lean = _encode(msgs, [0.1], lean=True, chunker=chunker, lean_gather=window)
        today = _encode(msgs, [0.1], chunker=chunker)
        assert [t for t, _ in lean][:-2] == [t for t, _ in today][:-2]
        assert lean[-2][0] <= today[-2][0] + 0.1 + 1e-9


def test_released_text_waits_the_gather_window_after_its_oldest_character() -> None:
    # a word every 0.1 s: the chunker releases a chunk every ~0.6 s (max_delay 0.5); lean, each
    # ChatMessage after the first goes 1.5 s after its oldest word arrived, two chunks in it
    msgs = _answer("word " * 60)
    chunker = {"min_chars": 120, "max_delay": 0.5}
    window = 1.5
    lean = _encode(msgs, [0.1], lean=True, chunker=chunker, lean_gather=window)
    today = _encode(msgs, [0.1], chunker=chunker)
    assert lean[0][0] == today[0][0]  # the first text never waits
    assert len(lean) <= len(today) // 2 + 1
    arrival = [T0 + 0.1 * (i + 2) for i in range(60)]  # word i is the (i + 2)th Message fed
    words_sent = 0
    gathered = [(t, _texts(c)) for t, c in lean if _texts(c)]
    for n, (t, texts) in enumerate(gathered):
        if words_sent:
            due = arrival[words_sent] + window
            if n < len(gathered) - 1:  # (the last goes with the message's end)
                assert t == pytest.approx(due) and len(texts) == 2
            assert t <= due + 1e-9
        words_sent += sum(len(x.split()) for x in texts)
    assert _decode([c for _, c in lean]) == _decode([c for _, c in today])


def test_a_code_block_released_when_its_fence_closes_waits_too() -> None:
    # a fenced code block has no chunker deadline while it is open; released when it closes, it
    # still gathers (by the last deadline the chunker had: its text came no sooner), here with
    # the sentences after it, rather than cutting a ChatMessage at once
    text = (
        "First. "
        + "Some words before the code. " * 2
        + "\n\n```python\nx = 1\ny = 2\n```\n\n"
        + "Then more words after it. " * 4
    )
    msgs = _answer(text)
    chunker = {"min_chars": 10, "max_delay": 0.5}
    lean = _encode(msgs, [0.05], lean=True, chunker=chunker)
    [with_code] = [_texts(c) for _, c in lean if any("```" in x for x in _texts(c))]
    assert any(x.startswith("Then more words") for x in with_code)
    today = _encode(msgs, [0.05], chunker=chunker)
    assert _decode([c for _, c in lean]) == _decode([c for _, c in today])


def test_a_relays_flush_keeps_the_chunkers_deadline_not_the_gather_window() -> None:
    # a relay flushes each sub-agent chunk: it goes on as it came, within the chunker's bound
    enc = ChatEncoder("c", tagged=True, lean=True, deterministic=True)
    ids = {"message_id": "M1"}
    sent: list[tuple[float, ChatMessage]] = []
    now = T0
    for i, word in enumerate(["First chunk. ", "Second chunk. ", "Third chunk. "]):
        now = T0 + i
        sent += [
            (now, c)
            for c in enc.feed(Message(type="text", props={"content": word}, delta=True, **ids), now)
        ]
        sent += [(now, c) for c in enc.flush(None, "M1", now)]
        d = enc.next_deadline
        if d is not None:
            assert d <= now + CHAT_CHUNKER_DEFAULTS["max_delay"]
            sent += [(d, c) for c in enc.poll(d)]
    assert [_texts(c) for _, c in sent] == [
        ["First chunk. "],
        ["Second chunk. "],
        ["Third chunk. "],
    ]


def test_a_messages_end_waits_meta_delay_so_the_replys_end_goes_with_it() -> None:
    # the end of the answer's stream is not content: lean, it waits as metadata does, and the
    # reply's end 50 ms later rides in the same ChatMessage
    msgs = _answer("Hi there. " * 3)
    lean = _encode(msgs, [0.05], lean=True)
    today = _encode(msgs, [0.05], fold=True)
    assert len(lean) == len(today) - 1
    assert _decode([c for _, c in lean]) == _decode([c for _, c in today])


def test_plain_and_older_tagged_askers_get_todays_form_byte_for_byte() -> None:
    msgs = _answer("Hi. " + "One more sentence here. " * 12)
    chunker = {"min_chars": 10, "max_delay": 0.5}
    for fold in (False, True):
        a = _encode(msgs, [0.02], fold=fold, chunker=chunker)
        b = _encode(msgs, [0.02], fold=fold, chunker=chunker)
        assert [(t, c.json()) for t, c in a] == [(t, c.json()) for t, c in b]
    # lean is ignored for a plain asker: it could not read it
    plain = _encode(msgs, [0.02], lean=True, tagged=False, chunker=chunker)
    assert [(t, c.json()) for t, c in plain] == [
        (t, c.json()) for t, c in _encode(msgs, [0.02], tagged=False, chunker=chunker)
    ]
    # cuts without lean (an asker that reads one but not the other) is ignored too
    for fold in (False, True):
        assert [(t, c.json()) for t, c in _encode(msgs, [0.02], fold=fold, cuts=True)] == [
            (t, c.json()) for t, c in _encode(msgs, [0.02], fold=fold)
        ]
    # an asker of the previous release (lean=1 alone): a TextContent per chunk, no cuts
    lean = _encode(msgs, [0.02], lean=True, chunker=chunker)
    assert any(len(_texts(c)) > 1 for _, c in lean)
    assert all("cuts" not in c.json() for _, c in lean)


def test_the_asker_declares_the_lean_wire_in_its_tag() -> None:
    asked = read_chat(chat_of([TextContent(text="hi"), request_tags()]))
    assert asked.reads_lean and asked.reads_folds and asked.reads_cuts
    old = {k: v for k, v in request_tags().metadata.items() if k != "lean"}
    assert not read_chat(chat_of([MetadataContent(metadata=old)])).reads_lean
    assert not read_chat(chat_of([MetadataContent(metadata=old)])).reads_cuts  # only with lean
    previous = {k: v for k, v in request_tags().metadata.items() if k != "cuts"}
    view = read_chat(chat_of([MetadataContent(metadata=previous)]))
    assert view.reads_lean and not view.reads_cuts


def _tool_steps() -> list[Message]:
    """Two tool calls in a thread, each a block with a loading message: metadata alone."""
    out: list[Message] = []
    for n in (1, 2):
        bid, mid = f"B{n}", f"M{n}"
        ids = {"message_id": mid, "block_id": bid, "thread_id": "T1"}
        out += [
            lifecycle(BLOCK_START, BlockStartData(block_id=bid, type="tool"), block_id=bid),
            lifecycle(MESSAGE_START, MessageStartData(message_id=mid, type="loading"), **ids),
            Message(type="loading", props={"message": "Searching…"}, **ids),
            Message(type="loading", props={"done": True}, delta=True, delta_action="merge", **ids),
            lifecycle(MESSAGE_END, MessageEndData(message_id=mid, type="loading"), **ids),
            lifecycle(BLOCK_END, BlockEndData(block_id=bid), block_id=bid, thread_id="T1"),
        ]
    return [*out, lifecycle(STREAM_END, StreamEndData(status="completed"))]


def _parts_text(md: dict[str, str]) -> str:
    """A folded group's parts as JSON text (the lean wire's ``p`` with its quotes swapped back)."""
    return md["p"].translate(str.maketrans("\"'", "'\"")) if "p" in md else md["parts"]


def _fold_parts(chats: list[tuple[float, ChatMessage]]) -> list[tuple[dict[str, str], str]]:
    return [
        (i.metadata, _parts_text(i.metadata))
        for _, c in chats
        for i in c.content
        if isinstance(i, MetadataContent) and i.metadata.get("op") == "fold"
    ]


def test_folded_parts_name_only_the_ids_the_decoder_cannot_infer() -> None:
    msgs = _tool_steps()
    lean = _encode(msgs, [0.0], lean=True, meta_delay=1.0)
    folded = _encode(msgs, [0.0], fold=True, meta_delay=1.0)
    [(meta, parts)] = _fold_parts(lean)
    [(_, before)] = _fold_parts(folded)
    assert "parts" not in meta and len(meta["p"]) < len(before)
    assert '"e":"block_start"' in parts and '"event":"block_start"' not in parts
    assert parts.count('"block_id"') < before.count('"block_id"')
    assert parts.count('"thread_id"') < before.count('"thread_id"')
    assert _decode([c for _, c in lean]) == _decode([c for _, c in folded])


def _rel(parts: str, message_id: str | None = None, swapped: bool = True) -> ChatMessage:
    """A lean folded group of ``parts`` (JSON text): carried with its quotes swapped, as ``p``,
    or (``swapped`` False) as an earlier responder's ``parts`` with ``rel=1``."""
    lean = (
        {"p": parts.translate(str.maketrans("\"'", "'\""))}
        if swapped
        else {
            "parts": parts,
            "rel": "1",
        }
    )
    md = {TAG_KEY: "1", "op": "fold", **lean, "seq": "1", "conversation": "c"}
    if message_id is not None:
        md["message_id"] = message_id
    return chat_of([MetadataContent(metadata=md)])


@pytest.mark.parametrize("swapped", [True, False])
def test_relative_ids_follow_the_event_data_then_the_previous_part(swapped: bool) -> None:
    dec = ChatDecoder()
    parts = (
        '[{"thread_id":"T1","block_id":"B1","type":"event","props":{"event":"message_start",'
        '"data":{"message_id":"M1","type":"loading"}}},'
        '{"type":"loading","props":{"message":"x"}},'
        '{"block_id":"","type":"loading","props":{"done":true},"delta":"true"},'
        '{"e":"message_end","d":{"message_id":"M2","type":"loading"}},{"e":"ping"}]'
    )
    out = dec.feed("agent1peer", _rel(parts, swapped=swapped), 0.0)
    assert dec.drain_warnings() == []
    assert [(m.message_id, m.thread_id, m.block_id) for m in out] == [
        ("M1", "T1", "B1"),
        ("M1", "T1", "B1"),
        ("M1", "T1", None),  # "": none
        ("M2", "T1", None),  # the event's data
        ("M2", "T1", None),
    ]
    assert out[3].props == {"event": "message_end", "data": {"message_id": "M2", "type": "loading"}}
    assert out[4].type == "event" and out[4].props == {"event": "ping"}


@pytest.mark.parametrize(
    "parts",
    [
        '[{"message_id":5,"type":"loading"}]',
        '[{"message_id":"' + "m" * 5000 + '","type":"loading"}]',
        '[{"type":"event","props":{"event":"message_start","data":{"message_id":"'
        + "m" * 5000
        + '"}}}]',
        '[{"thread_id":null,"type":"loading"}]',
        '[{"d":{"block_id":"B1"}}]',  # an event's data without its event
        '[{"e":"block_end","type":"event"}]',
        '[{"e":"block_end","props":{}}]',
        '[{"e":5}]',
    ],
)
def test_a_bad_relative_part_is_a_warning_never_a_traceback(parts: str) -> None:
    dec = ChatDecoder()
    dec.feed("agent1bad", _rel(parts), 0.0)
    warnings = dec.drain_warnings()
    assert warnings and all(w.code == "bad_metadata" for w in warnings)


def test_the_lean_wire_carries_folded_parts_with_their_quotes_swapped_not_escaped() -> None:
    # a tool call's arguments are JSON in JSON: both levels of quotes swap back exactly
    msgs = _tool_steps()
    msgs.insert(
        2,
        Message(
            type="tool_call",
            props={"id": "c1", "name": "it's", "arguments": '{"q": "say \\"hi\\" it\'s"}'},
            message_id="M9",
            block_id="B1",
            thread_id="T1",
        ),
    )
    lean = _encode(msgs, [0.0], lean=True, meta_delay=1.0)
    folded = _encode(msgs, [0.0], fold=True, meta_delay=1.0)
    [(meta, _)] = _fold_parts(lean)
    [(before, _)] = _fold_parts(folded)
    assert meta["p"].count('"') == before["parts"].count("'") < before["parts"].count('"')
    lean_bytes = len(lean[0][1].json())
    assert lean_bytes < len(folded[0][1].json()) - before["parts"].count('"') // 2
    assert _decode([c for _, c in lean]) == _decode([c for _, c in folded])


@pytest.mark.parametrize(
    "md",
    [
        {"p": "[{'type':'loading'}]", "parts": '[{"type":"loading"}]'},  # both: which one?
        {"p": '[{"type":"loading"}]'},  # quotes not swapped: not JSON once swapped back
        {"p": "[{'type':'loading'"},  # cut short
        {"p": ""},
    ],
)
def test_a_bad_lean_parts_value_is_a_warning_never_a_traceback(md: dict[str, str]) -> None:
    dec = ChatDecoder()
    meta = {TAG_KEY: "1", "op": "fold", "seq": "1", "conversation": "c", **md}
    out = dec.feed("agent1bad", chat_of([MetadataContent(metadata=meta)]), 0.0)
    assert out == []
    warnings = dec.drain_warnings()
    assert warnings and all(w.code == "bad_metadata" for w in warnings)


def _thinking(text: str) -> list[Message]:
    ids = {"message_id": "M1", "block_id": "B1"}
    words = [w + " " for w in text.split(" ")]
    return [
        lifecycle(MESSAGE_START, MessageStartData(message_id="M1", type="thinking"), **ids),
        *[Message(type="thinking", props={"content": w}, delta=True, **ids) for w in words],
        lifecycle(
            MESSAGE_END,
            MessageEndData(message_id="M1", type="thinking", chunk_count=len(words)),
            **ids,
        ),
        lifecycle(STREAM_END, StreamEndData(status="completed")),
    ]


def _ends(chats: list[tuple[float, ChatMessage]]) -> list[dict[str, Any]]:
    """The data of every message_end a ChatMessage carries (a group's or a folded part's)."""
    out: list[dict[str, Any]] = []
    for _, c in chats:
        for i in c.content:
            if isinstance(i, MetadataContent) and TAG_KEY in i.metadata:
                md = i.metadata
                parts = json.loads(_parts_text(md)) if "parts" in md or "p" in md else []
                props = [expand(p).get("props") for p in parts if isinstance(p, dict)]
                if "props" in md:
                    props.append(json.loads(md["props"]))
                out += [p["data"] for p in props if p and p.get("event") == MESSAGE_END]
    return out


def test_reasoning_carried_as_metadata_is_not_sent_twice_in_its_message_end() -> None:
    text = "I should check the spec first. Then compare the costs of each way. " * 3
    msgs = with_extra(_thinking(text))
    for steps in ([0.0], [0.05]):  # folded whole, and streamed over several ChatMessages
        lean = _encode(msgs, steps, lean=True, chunker={"max_delay": 0.2})
        today = _encode(msgs, steps, fold=True, chunker={"max_delay": 0.2})
        [end] = _ends(lean)
        [before] = _ends(today)
        assert "extra" not in end and before["extra"]["content"].startswith(text)
        assert _decode([c for _, c in lean]) == _decode([c for _, c in today])


def test_a_lost_kept_append_leaves_the_text_out_with_a_warning_never_a_wrong_one() -> None:
    text = "I should check the spec first. Then compare the costs of each way. " * 3
    lean = [c for _, c in _encode(with_extra(_thinking(text)), [0.05], lean=True)]
    assert len(lean) > 2
    dec = ChatDecoder(max_message_bytes=150)  # the appends past the cap are refused
    out: list[Message] = []
    for c in lean:
        out += dec.feed("agent1peer", c, 1000.0)
    [end] = [m for m in out if m.event == MESSAGE_END]
    assert "extra" not in end.event_data  # not a partial text
    assert "message_too_large" in {w.code for w in dec.drain_warnings()}


def _group(seq: int, **md: str) -> ChatMessage:
    meta = {TAG_KEY: "1", "op": "message", "seq": str(seq), "conversation": "c", **md}
    return chat_of([MetadataContent(metadata=meta)])


@pytest.mark.parametrize(
    "appends",
    [
        [],  # nothing kept: an end that says its text was kept
        [{"props": '{"content":"a"}', "delta": "true", "keep": "1"}, {"props": '{"x":1}'}],
        [{"props": '{"content":"a"}', "delta": "true", "keep": "1"}, {"props": "[", "keep": "1"}],
        [{"props": '{"content":"a"}', "keep": "1"}],  # not an append
    ],
)
def test_an_end_whose_kept_text_is_not_whole_is_a_warning_never_a_wrong_text(
    appends: list[dict[str, str]],
) -> None:
    ids = {"message_id": "M1", "type": "thinking"}
    chats = [_group(i + 1, **ids, **a) for i, a in enumerate(appends)]
    end = '{"event":"message_end","data":{"message_id":"M1","type":"thinking"}}'
    chats.append(_group(len(chats) + 1, message_id="M1", type="event", props=end, extra="stream"))
    dec = ChatDecoder()
    out: list[Message] = []
    for c in chats:
        out += dec.feed("agent1peer", c, 0.0)
    ends = [m for m in out if m.event == MESSAGE_END]
    assert all("extra" not in m.event_data for m in ends)
    assert dec.drain_warnings()


def test_appends_kept_as_metadata_count_against_max_kept_bytes_total_and_are_released() -> None:
    # two conversations keep their thinking's appends to rebuild its end; the budget holds one
    dec = ChatDecoder(limits=DecoderLimits(max_kept_bytes_total=1000))
    end = '{"event":"message_end","data":{"message_id":"M1","type":"thinking"}}'
    append = {"props": json.dumps({"content": "x" * 600}), "delta": "true", "keep": "1"}
    out: list[Message] = []
    for conv in ("c1", "c2"):
        ids = {"conversation": conv, "message_id": "M1", "type": "thinking"}
        out += dec.feed("agent1peer", _group(1, **ids, **append), 0.0)
    assert 600 < dec._state.kept_bytes <= 1000  # the first's, counted; the second's not kept
    for conv in ("c1", "c2"):
        ids = {"conversation": conv, "message_id": "M1", "type": "event"}
        out += dec.feed("agent1peer", _group(2, **ids, props=end, extra="stream"), 0.0)
    first, second = [m for m in out if m.event == MESSAGE_END]
    assert first.event_data["extra"] == {"content": "x" * 600}
    assert "extra" not in second.event_data  # never a partial text
    assert "message_too_large" in {w.code for w in dec.drain_warnings()}
    assert dec._state.kept_bytes == 0  # released at each message's end


def _chunk_chat(seq: int | None, *items: Any, conversation: str = "c", **md: str) -> ChatMessage:
    """A ChatMessage of one chunk group (``md``: its ids) and the items after it."""
    meta = {TAG_KEY: "1", "op": "chunk", "conversation": conversation, **md}
    if seq is not None:
        meta["seq"] = str(seq)
    return chat_of([MetadataContent(metadata=meta), *items])


def _opening(seq: int, mid: str, text: str, conversation: str = "c") -> ChatMessage:
    from uagents_core.contrib.protocols.chat import StartStreamContent

    from agent_stream.adapters.chat import stream_id_for

    sid = stream_id_for(conversation, None, mid)
    return _chunk_chat(
        seq,
        StartStreamContent(stream_id=sid),
        TextContent(text=text),
        conversation=conversation,
        stream_id=str(sid),
        message_id=mid,
        type="text",
    )


def _texts_of(out: list[Message]) -> list[tuple[str | None, str]]:
    return [(m.message_id, m.props["content"]) for m in out if m.type == "text" and m.props]


def test_a_follow_on_chunk_group_naming_no_ids_is_of_the_previous_chunk_groups_stream() -> None:
    dec = ChatDecoder()
    out = dec.feed("agent1peer", _opening(1, "M1", "One. "), 0.0)
    out += dec.feed("agent1peer", _opening(2, "M2", "Two. "), 0.0)
    out += dec.feed("agent1peer", _chunk_chat(3, TextContent(text="more two. ")), 0.0)
    out += dec.feed("agent1peer", _chunk_chat(4, TextContent(text="one. "), message_id="M1"), 0.0)
    out += dec.feed("agent1peer", _chunk_chat(5, TextContent(text="and one.")), 0.0)
    assert dec.drain_warnings() == []
    assert _texts_of(out) == [
        ("M1", "One. "),
        ("M2", "Two. "),
        ("M2", "more two. "),
        ("M1", "one. "),
        ("M1", "and one."),
    ]


def _dropped(dec: ChatDecoder, out: list[Message]) -> None:
    """The id-less text went nowhere, with a warning, never into another message."""
    assert all("lost" not in (m.props or {}).get("content", "") for m in out)
    assert "bad_metadata" in {w.code for w in dec.drain_warnings()}


def test_a_chunk_group_naming_no_ids_with_no_chunk_group_before_it_is_dropped() -> None:
    dec = ChatDecoder()
    _dropped(dec, dec.feed("agent1peer", _chunk_chat(1, TextContent(text="lost")), 0.0))


def test_a_chunk_group_naming_no_ids_after_a_skipped_gap_is_not_read_as_the_older_stream() -> None:
    # ChatMessage 2 (which opened M2) never arrives: the id-less text after it is M2's, not M1's
    dec = ChatDecoder(gap_timeout=1.0)
    out = dec.feed("agent1peer", _opening(1, "M1", "One. "), 0.0)
    out += dec.feed("agent1peer", _chunk_chat(3, TextContent(text="lost")), 0.0)
    out += dec.poll(5.0)  # the gap is given up
    assert {"gap", "bad_metadata"} <= {w.code for w in dec.drain_warnings()}
    out += dec.feed("agent1peer", _chunk_chat(4, TextContent(text="lost too")), 5.0)
    assert [t for t in _texts_of(out) if t[0] == "M1"] == [("M1", "One. ")]
    out += dec.feed("agent1peer", _chunk_chat(5, TextContent(text="named. "), message_id="M1"), 5.0)
    out += dec.feed("agent1peer", _chunk_chat(6, TextContent(text="inferred again.")), 5.0)
    assert [t for t in _texts_of(out) if t[0] == "M1"] == [
        ("M1", "One. "),
        ("M1", "named. "),
        ("M1", "inferred again."),
    ]


def test_a_chunk_group_naming_no_ids_in_an_unnumbered_chat_message_is_dropped() -> None:
    dec = ChatDecoder()
    out = dec.feed("agent1peer", _opening(1, "M1", "One. "), 0.0)
    out += dec.feed("agent1peer", _chunk_chat(None, TextContent(text="lost")), 0.0)
    assert _texts_of(out) == [("M1", "One. ")]
    _dropped(dec, out)


def test_a_chunk_group_naming_no_ids_is_never_of_another_conversation_or_peer() -> None:
    dec = ChatDecoder()
    out = dec.feed("agent1peer", _opening(1, "M1", "One. "), 0.0)
    out += dec.feed("agent1peer", _chunk_chat(1, TextContent(text="lost"), conversation="c2"), 0.0)
    out += dec.feed("agent1other", _chunk_chat(1, TextContent(text="lost")), 0.0)
    assert _texts_of(out) == [("M1", "One. ")]
    _dropped(dec, out)


@pytest.mark.parametrize(
    "ids",
    [
        {"thread_id": "T1"},  # a thread without its message: malformed, not inferred
        {"message_id": "m" * 5000},  # refused: what follows it is not inferred either
    ],
)
def test_a_chunk_group_with_partial_or_refused_ids_leaves_nothing_to_infer(
    ids: dict[str, str],
) -> None:
    dec = ChatDecoder()
    out = dec.feed("agent1peer", _opening(1, "M1", "One. "), 0.0)
    out += dec.feed("agent1peer", _chunk_chat(2, TextContent(text="lost"), **ids), 0.0)
    out += dec.feed("agent1peer", _chunk_chat(3, TextContent(text="lost too")), 0.0)
    assert _texts_of(out) == [("M1", "One. ")]
    _dropped(dec, out)


def test_lean_follow_on_chunks_of_one_stream_name_no_ids_and_others_do() -> None:
    # an answer in thread T1, another in T2 in its middle: a chunk group names its message's
    # ids only when the chunk group before it on the wire was of the other stream
    def answer(tid: str, mid: str, n: int, start: int = 0) -> list[Message]:
        ids = {"message_id": mid, "thread_id": tid}
        return [
            Message(type="text", props={"content": f"{mid} says {i}. "}, delta=True, **ids)
            for i in range(start, start + n)
        ]

    msgs = [*answer("T1", "M1", 40), *answer("T2", "M2", 10), *answer("T1", "M1", 40, 40)]
    msgs.append(lifecycle(STREAM_END, StreamEndData(status="completed")))
    chunker = {"min_chars": 10, "max_delay": 0.2}
    lean = _encode(msgs, [0.05], lean=True, chunker=chunker)
    today = _encode(msgs, [0.05], fold=True, chunker=chunker)
    groups = [
        i.metadata
        for _, c in lean
        for i in c.content
        if isinstance(i, MetadataContent) and i.metadata.get("op") == "chunk"
    ]
    follow_ons = [g for g in groups if "stream_id" not in g]
    bare = [g for g in follow_ons if "message_id" not in g]
    assert bare and all("thread_id" not in g for g in bare)
    named = {(g.get("thread_id"), g.get("message_id")) for g in follow_ons if g not in bare}
    assert ("T1", "M1") in named  # M1 again after M2's text
    assert _decode([c for _, c in lean]) == _decode([c for _, c in today])


# -- cut text (an asker whose tag says cuts=1 too) -------------------------------------------------
def _cut_groups(chats: list[tuple[float, ChatMessage]]) -> list[tuple[dict[str, str], list[str]]]:
    """Each chunk group's metadata and the texts after it, up to the next tagged group."""
    out: list[tuple[dict[str, str], list[str]]] = []
    for _, c in chats:
        for i in c.content:
            if isinstance(i, MetadataContent) and TAG_KEY in i.metadata:
                out.append((i.metadata, []))
            elif isinstance(i, TextContent) and out:
                out[-1][1].append(i.text)
    return [(md, texts) for md, texts in out if md.get("op") == "chunk"]


def test_gathered_chunks_go_as_one_text_and_their_lengths_in_characters() -> None:
    # CJK, an emoji outside the BMP (two UTF-16 units, four UTF-8 bytes, one code point) and a
    # combining mark: lengths count Python characters, the same after a trip through JSON
    msgs = _answer("Hi. " + "中文句子。 Emoji 😀 here, e\u0301 too! " * 12)
    chunker = {"min_chars": 10, "max_delay": 0.5}
    lean = _encode(msgs, [0.02], lean=True, chunker=chunker)
    cut = _encode(msgs, [0.02], lean=True, cuts=True, chunker=chunker)
    assert [t for t, _ in cut] == [t for t, _ in lean]
    before = _cut_groups(lean)
    after = _cut_groups([(t, parse_chat(c.json())) for t, c in cut])
    assert len(before) == len(after) and any(len(texts) > 1 for _, texts in before)
    for (md, texts), (cut_md, [text]) in zip(before, after, strict=True):
        assert text == "".join(texts)  # a plain reader reads the same text
        if len(texts) > 1:
            assert cut_md["cuts"] == ",".join(str(len(t)) for t in texts)
        else:
            assert "cuts" not in cut_md  # one chunk: nothing to say
        assert {k: v for k, v in cut_md.items() if k != "cuts"} == md
    assert sum(len(c.json()) for _, c in cut) < sum(len(c.json()) for _, c in lean)
    today = _decode([c for _, c in lean])
    assert _decode([parse_chat(c.json()) for _, c in cut]) == today
    assert len([m for m in today if m.type == "text"]) > len(after)  # chunks, not groups


def test_a_shifted_cut_decodes_to_other_chunks() -> None:
    # what the property compares would see a boundary moved by one character
    msgs = _answer("Hi. " + "One more sentence here. " * 12)
    chunker = {"min_chars": 10, "max_delay": 0.5}
    cut = [c for _, c in _encode(msgs, [0.02], lean=True, cuts=True, chunker=chunker)]
    today = _decode([c for _, c in _encode(msgs, [0.02], lean=True, chunker=chunker)])
    assert _decode(cut) == today
    [md] = [md for md, _ in _cut_groups([(0.0, c) for c in cut]) if "cuts" in md][:1]
    first, second, *rest = (int(n) for n in md["cuts"].split(","))
    md["cuts"] = ",".join(map(str, [first + 1, second - 1, *rest]))
    assert _decode(cut) != today


def test_a_group_of_more_chunks_than_max_cuts_goes_on_in_a_follow_on_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agent_stream.adapters.chat import batching

    monkeypatch.setattr(batching, "MAX_CUTS", 3)
    msgs = _answer("Hi. " + "One more sentence here. " * 30)
    chunker = {"min_chars": 10, "max_delay": 0.5}
    cut = _encode(msgs, [0.0], lean=True, cuts=True, chunker=chunker)
    groups = _cut_groups(cut)
    assert all(len(md.get("cuts", "").split(",")) <= 3 for md, _ in groups)
    assert sum(1 for md, _ in groups if "cuts" in md) > 2
    today = _decode([c for _, c in _encode(msgs, [0.0], lean=True, chunker=chunker)])
    assert _decode([c for _, c in cut]) == today


def _stream_then(cuts: str | None, *texts: str, limits: DecoderLimits | None = None) -> Any:
    """A stream opened, then a follow-on chunk group (``cuts``, if any) and ``texts`` after it,
    then more text in its own group: (the chunks decoded, the warnings' codes)."""
    dec = ChatDecoder(limits=limits)
    out = dec.feed("agent1peer", _opening(1, "M1", "One. "), 0.0)
    md = {} if cuts is None else {"cuts": cuts}
    out += dec.feed("agent1peer", _chunk_chat(2, *(TextContent(text=t) for t in texts), **md), 0.0)
    out += dec.feed("agent1peer", _chunk_chat(3, TextContent(text=" after.")), 0.0)
    return [t for mid, t in _texts_of(out) if mid == "M1"], {w.code for w in dec.drain_warnings()}


@pytest.mark.parametrize(
    ("cuts", "text", "chunks"),
    [
        ("2,3", "abcde", ["ab", "cde"]),
        ("5", "abcde", ["abcde"]),
        ("2,1,1,3", "中文😀e\u0301ab", ["中文", "😀", "e", "\u0301ab"]),
        (",".join(["1"] * 1024), "x" * 1024, ["x"] * 1024),  # max_cuts, no more
    ],
)
def test_cuts_cut_a_chunk_groups_text_into_its_chunks(
    cuts: str, text: str, chunks: list[str]
) -> None:
    got, warned = _stream_then(cuts, text)
    assert got == ["One. ", *chunks, " after."] and not warned


def test_cuts_cut_only_the_first_text_after_their_group() -> None:
    got, warned = _stream_then("2,3", "abcde", "fg")
    assert got == ["One. ", "ab", "cde", "fg", " after."] and not warned


@pytest.mark.parametrize(
    ("cuts", "text"),
    [
        ("", "abcde"),
        ("abc", "abcde"),
        ("2,x", "abcde"),
        ("-2,7", "abcde"),
        ("+2,3", "abcde"),
        (" 2,3", "abcde"),
        ("2.0,3", "abcde"),
        ("2,,3", "abcde"),
        ("2,3,", "abcde"),
        (",5", "abcde"),
        ("0,5", "abcde"),  # a chunk is never empty
        ("02,3", "abcde"),
        ("٢,٣", "abcde"),  # Arabic-Indic digits: decimal, not ASCII
        ("²,3", "abcde"),  # a superscript: a digit, not a decimal
        ("2,2", "abcde"),  # short of the text
        ("3,3", "abcde"),  # past it
        ("5", ""),
        ("1,1", "😀"),  # UTF-16 units, not characters
        ("2,4", "😀中文"),  # UTF-8 bytes of the emoji... not characters either
        ("9" * 13 + ",1", "abcde"),
        ("1" * 5000, "abcde"),
        ("1e3", "abcde"),
        (",".join(["1"] * 1025), "x" * 1025),  # more than max_cuts
        (",".join(["1"] * 100_000), "x" * 100_000),
    ],
)
def test_bad_cuts_deliver_the_whole_text_as_one_chunk_with_a_warning(cuts: str, text: str) -> None:
    got, warned = _stream_then(cuts, text)
    assert got == ["One. ", text, " after."]  # never lost, never raised: one chunk
    assert warned == {"bad_metadata"}


def test_max_cuts_caps_the_chunks_of_one_group() -> None:
    small = DecoderLimits(max_cuts=3)
    got, warned = _stream_then("1,1,1", "abc", limits=small)
    assert got == ["One. ", "a", "b", "c", " after."] and not warned
    got, warned = _stream_then("1,1,1,1", "abcd", limits=small)
    assert got == ["One. ", "abcd", " after."] and warned == {"bad_metadata"}


def test_cuts_on_a_group_that_is_not_a_chunk_group_are_ignored() -> None:
    dec = ChatDecoder()
    md = {TAG_KEY: "1", "op": "text", "seq": "1", "conversation": "c", "message_id": "M1"}
    chat = chat_of([MetadataContent(metadata={**md, "cuts": "1,1"}), TextContent(text="ab")])
    out = dec.feed("agent1peer", chat, 0.0)
    assert _texts_of(out) == [("M1", "ab")] and dec.drain_warnings() == []


def test_a_group_with_an_empty_chunk_is_not_cut() -> None:
    # a stream whose first chunk was empty (an empty append flushed) then went on: its lengths
    # would say 0, which the decoder refuses, so the group goes as today, a TextContent a chunk
    from uagents_core.contrib.protocols.chat import StartStreamContent

    from agent_stream.adapters.chat.batching import _cut
    from agent_stream.adapters.chat.wire import Group

    start = StartStreamContent.construct(type="start-stream", stream_id=uuid4_from("s"))
    texts = [TextContent.construct(type="text", text=t) for t in ("", "ab", "c")]
    group = Group({TAG_KEY: "1", "op": "chunk"}, [start, *texts])
    _cut(group)
    assert group.items == [start, *texts] and "cuts" not in group.meta
    group = Group({TAG_KEY: "1", "op": "chunk"}, [start, *texts[1:]])
    _cut(group)
    assert [getattr(i, "text", None) for i in group.items] == [None, "abc"]
    assert group.meta["cuts"] == "2,1"
