"""A reply that asks its asker something (an approval, a question: a ``user_input`` message):
a plain peer reads the question as text, and the reply does not end the session the answer is
to come in; a reply that asks nothing still ends it."""

from __future__ import annotations

from chat_fixtures import encode, plain, run
from uagents_core.contrib.protocols.chat import EndSessionContent

from agent_stream.sources.approvals import asking as asking_message
from agent_stream.writer import StreamWriter

QUESTION = 'Approve delete_file({"path": "a"})? Answer yes to run it; anything else refuses it.'


async def asking(out: StreamWriter) -> None:
    async with out.block("llm") as b:
        await b.text("I need your approval first.")
        await b.send(asking_message("c1", "delete_file", {"path": "a"}))


async def answering(out: StreamWriter) -> None:
    async with out.block("llm") as b:
        await b.text("Done.")


def ends_session(chats: list) -> bool:  # type: ignore[type-arg]
    return any(isinstance(i, EndSessionContent) for c in chats for i in c.content)


def test_a_plain_peer_reads_the_question_and_its_session_goes_on() -> None:
    for tagged in (False, True):
        chats = encode(run(asking), close=True, session=True, tagged=tagged)
        assert QUESTION in plain(chats)
        assert plain(chats).startswith("I need your approval first.")
        assert not ends_session(chats), "the answer is awaited in this session"


def test_a_reply_that_asks_nothing_still_ends_the_session() -> None:
    chats = encode(run(answering), close=True, session=True)
    assert plain(chats) == "Done." and ends_session(chats)
