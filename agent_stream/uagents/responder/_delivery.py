"""The responder side of delivery for one StreamingChat: who acknowledges, questions
already answered, replay buffers, and the asker's delivery ops (``resend``, ``cancel``).

Decisions come from :mod:`agent_stream.adapters.chat.delivery`; this module only routes them:

- a peer is *known to acknowledge* once an acknowledgement came from it, or when its request
  carried agent_stream tags (agent_stream acknowledges every ChatMessage); how long each peer
  has lately taken to acknowledge is kept (``ack_clock``), and a reply waits that long before
  sending a ChatMessage again;
- a question that arrives again (same sender, same msg_id) is acknowledged by the plugin as
  usual and counted on its reply, never answered twice;
- ``resend`` (``from``..``to``) is answered from the reply's replay buffer, while it is kept;
- ``cancel``, or an EndSessionContent (without text) from the asker while a reply to it is open,
  cancels that reply. A cancel naming an unknown or finished conversation, or sent by another
  sender, is ignored with a debug log.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping

from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream.adapters.chat.ack_clock import AckClock
from agent_stream.adapters.chat.delivery import DeliveryPolicy, ReplayBuffer, ReplayStore
from agent_stream.adapters.chat.incoming import Incoming
from agent_stream.adapters.chat.reorder import seq_number
from agent_stream.adapters.chat.wire import OP_CANCEL, OP_RESEND
from agent_stream.uagents._chat_json import chat_from_json
from agent_stream.uagents._clock import LOOP_CLOCK, Clock
from agent_stream.uagents.responder._pump import Outgoing

__all__ = ["ResponderDelivery"]

LOG = logging.getLogger("agent_stream.uagents")

Send = Callable[[ChatMessage], Awaitable[object]]
_MAX_PEERS = 4096
_MAX_QUESTIONS = 4096


class ResponderDelivery:
    """What a StreamingChat keeps for delivery across its replies (all bounded).

    Args:
        policy: the delivery policy (None: the defaults).
        clock: the runtime's clock.
    """

    def __init__(self, policy: DeliveryPolicy | None = None, clock: Clock = LOOP_CLOCK) -> None:
        self.clock = clock
        self.policy = policy or DeliveryPolicy()
        self.replay: ReplayStore[tuple[str, str], str] = ReplayStore(self.policy)  # JSON kept
        self._acking: OrderedDict[str, None] = OrderedDict()
        self.ack_clock = AckClock(_MAX_PEERS)  # how long each asker takes to acknowledge
        self._questions: OrderedDict[tuple[str, str], None] = OrderedDict()
        self.repairs = 0  # resend requests served
        self.cancels = 0  # replies cancelled by their asker

    # -- acknowledgements ---------------------------------------------------------------------
    def note_ack(self, sender: str) -> None:
        """An acknowledgement came from ``sender``.

        Args:
            sender: the peer that acknowledged.
        """
        self._acking.pop(sender, None)
        self._acking[sender] = None
        if len(self._acking) > _MAX_PEERS:
            self._acking.popitem(last=False)

    def peer_acks(self, peer: str, tagged: bool) -> bool:
        """Whether silence from ``peer`` may be read as loss.

        Args:
            peer: the asker's address.
            tagged: the asker's question was tagged (an agent_stream peer).
        """
        return tagged or peer in self._acking

    # -- questions --------------------------------------------------------------------------------
    def seen_before(self, sender: str, msg_id: str) -> bool:
        """True when this question was already taken (remembers it otherwise).

        Args:
            sender: the asker's address.
            msg_id: the question's msg_id.
        """
        key = (sender, msg_id)
        if key in self._questions:
            return True
        self._questions[key] = None
        if len(self._questions) > _MAX_QUESTIONS:
            self._questions.popitem(last=False)
        return False

    def buffer_for(self, peer: str, conversation: str) -> ReplayBuffer[str]:
        """A fresh replay buffer for a reply.

        Args:
            peer: the asker's address.
            conversation: the question's msg_id.
        """
        self.replay.prune(self.clock.now())
        return self.replay.open((peer, conversation))

    def ended(self, peer: str, conversation: str) -> None:
        """A reply ended: its buffer lingers.

        Args:
            peer: the asker's address.
            conversation: the question's msg_id.
        """
        self.replay.end((peer, conversation), self.clock.now())

    # -- delivery ops -----------------------------------------------------------------------------
    def control(
        self, sender: str, op: Mapping[str, str], replies: Iterable[Outgoing], send: Send
    ) -> Awaitable[None] | None:
        """Handle an asker's ``resend``/``cancel``; returns the resend work to run, if any.

        Args:
            sender: the asker's address.
            op: the control op (``op``, ``conversation``, and for a resend ``from`` and ``to``).
            replies: the replies being streamed.
            send: delivers one ChatMessage to ``sender``.
        """
        conv = op.get("conversation", "")
        out = next((o for o in replies if o.peer == sender and o.conversation == conv), None)
        if op.get("op") == OP_CANCEL:
            if out is not None and out.cancel():
                self.cancels += 1
                LOG.info("reply to %s cancelled by its asker", sender[:80])
            else:
                LOG.debug(
                    "cancel from %s for unknown or finished conversation %r ignored",
                    sender[:80],
                    conv[:80],
                )
            return None
        if op.get("op") != OP_RESEND:
            return None
        lo = seq_number(op.get("from"))
        buf = self.replay.get((sender, conv), self.clock.now())
        if lo is None or buf is None:
            LOG.debug("resend from %s for conversation %r: nothing kept", sender[:80], conv[:80])
            return None
        chats = [chat_from_json(kept) for kept in buf.covering(lo, seq_number(op.get("to")))]
        if not chats:
            return None
        self.repairs += 1
        if out is not None:
            return out.resend(chats)
        return _send_all(chats, send)

    def session_cancels(self, sender: str, msg: Incoming, replies: Iterable[Outgoing]) -> bool:
        """An EndSessionContent without text from ``sender``: cancel its open replies; True
        when it was such a message (it is not a question).

        Args:
            sender: the peer's address.
            msg: the incoming ChatMessage, read.
            replies: the replies being streamed.
        """
        if not msg.cancels_session:
            return False
        for out in list(replies):
            if out.peer == sender and out.cancel():
                self.cancels += 1
                LOG.info("reply to %s cancelled: the asker ended the session", sender[:80])
        return True


async def _send_all(chats: list[ChatMessage], send: Send) -> None:
    for chat in chats:
        await send(chat)
