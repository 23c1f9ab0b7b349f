"""The Agent Chat Protocol wire: Messages <-> uagents ``ChatMessage`` (pure, no I/O).

Each logical text message, keyed by (thread_id, message_id), is one chat stream
(StartStreamContent -> TextContent... -> EndStreamContent) whose stream_id is a UUID4 derived from
the conversation and the key (:func:`stream_id_for`). Text deltas are buffered by the
:class:`~agent_stream.chunking.TextChunker` into sentence/paragraph chunks.

What the chat models cannot carry travels in ``MetadataContent`` items in the same ChatMessage,
string values only. A ChatMessage's content is a run of *groups*: each group starts with a
MetadataContent whose dict holds ``TAG_KEY`` and describes the items after it, up to the next
tagged MetadataContent. Keys (absent ids are left out, never sent as "" or "None"):

==================  ==========================================================================
``agent_stream``    the tag (:data:`TAG_KEY`), protocol version ``"1"``
``seq``             per-conversation ChatMessage number 1, 2, ... (first group of a ChatMessage)
``seq_last``        the last number a :func:`coalesce`-d ChatMessage covers
``conversation``    the conversation the reply belongs to (first group of a ChatMessage); one
                    per reply (e.g. the request's msg_id): stream_ids derive from it, and the
                    decoder orders ChatMessages per (sender, conversation)
``op``              ``chunk``: each TextContent after it is a text chunk of stream
                    ``stream_id`` (the group that opens the stream also has the message's ids
                    and type; with ``cuts``, the first is cut into chunks by its lengths);
                    ``fold``: a folded message or run of groups (see Folding below);
                    ``text``: a whole text message, its content the TextContent after it;
                    ``message``: a Message carried in the metadata itself (items after it are
                    only a rendering for plain peers); ``end``: only ends stream ``stream_id``
``stream_id``       the chat stream of a ``chunk``/``end`` group (to an asker that reads folds, a
                    chunk of a stream already open names its message's ids instead; to a lean
                    one, no ids at all when the chunk group before it was of the same stream)
``message_id``, ``thread_id``, ``block_id``, ``type``   the Message's fields
``props``           the Message's props as JSON (``message`` groups)
``delta``, ``type_change``   ``"true"`` when set; ``delta_action``, ``delta_path`` when set
``message_metadata``         the Message's metadata (timestamp, sequence, trace_id) as JSON
``parts``           (``fold`` groups) the folded Messages' fields and chunk types (:mod:`.fold`);
                    to a lean asker ``p`` instead: the same JSON, ids relative, ``"`` and ``'``
                    swapped (so its quotes need no escaping)
``cuts``            (``chunk`` groups, to an asker whose tag says ``cuts=1``) the lengths in
                    characters (code points), comma-separated, of the chunks the TextContent
                    after it is cut into (see Lean)
``keep``, ``extra``  ``keep=1``: the decoder keeps the stream's text (to a lean asker, on a
                    ``message`` group: that append's text); ``extra=stream``: the
                    message_end's extra.content, left out, is that text
==================  ==========================================================================

Delivery ops (:mod:`.delivery`; docs/delivery.md): a ChatMessage holding one tagged
MetadataContent, unnumbered (no ``seq``), with ``op`` and ``conversation``:

==================  ==========================================================================
``keepalive``       responder -> asker while a reply is open and nothing else went for
                    ``keepalive`` seconds; ``high``: the last ``seq`` sent (a missing tail is a
                    gap the asker can ask for). Not shown to plain peers (tagged replies only).
``resend``          asker -> responder: send ChatMessages ``from``..``to`` of the reply again
                    (no ``to``: to the end) from the replay buffer, same msg_ids; ``from`` 1
                    rebuilds a reply for an asker that lost its state.
``cancel``          asker -> responder: stop the reply (its streams end ``cancelled``).
==================  ==========================================================================

What a plain peer (one that ignores streams and metadata) sees, concatenating TextContent:

- ``text`` (and ``refusal``): its content, appended as it streams; a whole text message as one
  TextContent. A later *replacement* of text already sent (a non-delta chunk, a replace/set/merge
  delta) cannot be unsent: it travels as metadata and the plain peer keeps the old text.
- ``thinking``: nothing, not even as metadata, unless the recipient's channels include
  ``reasoning`` (then as metadata). Its message_start/message_end are withheld with it.
- ``user_input`` (what the reply asks the asker: an approval, a question): its ``content`` as a
  readable line; a reply that asks does not end the session (no EndSessionContent) so that the
  answer comes in it.
- ``tool_call``, ``loading``, ``action``, events and custom types: nothing (metadata only).
- ``image``/``audio``/``video``: a ResourceContent with the URL and ``mime_type``.
- ``error``: a readable line ``Error: <message>`` (``Error (<code>): ...``) plus the metadata;
  a stream_end with status error and no error message before it adds the same line.
- ``type_change``: text already sent stays as sent; the correction is metadata. A change *to*
  text makes the new content visible from then on; a change to a withheld type (``thinking``)
  ends the chat stream, drops text still buffered and withholds the rest (the decoder learns the
  new type, with the text already sent as its content; if nothing was sent yet, the message is
  withheld whole); a change from a withheld type to text starts the message afresh (the withheld
  content is not revealed).

Folding (:mod:`.fold`): to an asker whose tag says ``fold=1`` (:func:`request_tags` does), a
message complete when its ChatMessage is cut goes as one group, ``op`` ``fold``, and each run of
metadata-only groups as one; the decoder gives exactly the Messages the unfolded groups give.
Nothing waits to fold. Others get the unfolded form.

Lean (:mod:`.batching`, :mod:`.fold`): to an asker whose tag says ``lean=1`` (:func:`request_tags`
does; it implies folding), fewer, fuller ChatMessages with less metadata in each:

- Text the chunker released does not cut a ChatMessage at once: it may wait until the gather
  window, ``lean_gather`` seconds (:data:`.wire.LEAN_GATHER`, 1.75 s; ``StreamingChat`` and
  :class:`ChatEncoder` take it), after its oldest character arrived, never less than the
  chunker's own deadline (``max_delay``, and the ``block_grace`` it may add), so sentences
  gather into one ChatMessage. A message's first text never waits (a stream's first chunk goes
  at once; a message carried as metadata, ``thinking``, keeps the chunker's deadline for its
  first append); metadata alone, and a stream's end, wait as they do today (``meta_delay``, or
  the chunker's deadline when later), so structure is no later; text a relay flushes keeps the
  chunker's deadline (hops do not add windows up). Each ChatMessage goes once its earliest group
  is due.
- A ChatMessage's consecutive chunks of one stream share one ``chunk`` group (each TextContent
  after it is a chunk of its stream), and a chunk group of the stream the chunk group before it
  was of names no ids (the decoder, reading the reply in order, infers them; after a gap it does
  not, and drops that text with a warning).
- Cut text: to an asker whose tag also says ``cuts=1`` (:func:`request_tags` does), those chunks
  go as one TextContent, their concatenation (a plain reader reads the same text), and the group
  says ``cuts``: their lengths in characters (Python ``str`` length, after JSON decoding),
  comma-separated, e.g. ``"57,120,31"`` (left out for one chunk; never 0; at most
  :data:`.wire.MAX_CUTS`, 1024, per group: more go on in a follow-on group). The decoder cuts the
  text back into the same chunks; lengths it cannot use (not positive decimals, not adding up
  to the text's length, more than ``DecoderLimits.max_cuts``) give the whole text as one chunk,
  with a ``bad_metadata`` warning. An asker that says ``lean=1`` alone gets a TextContent per
  chunk.
- A folded group carries ``p`` instead of ``parts``: the parts name only the ids the decoder
  cannot infer from the event data or the part before, an event part is
  ``{"e": event, "d": data}``, and the JSON's ``"`` and ``'`` are swapped (:mod:`.fold`).
- A message carried as metadata whose content went only as merged appends (``thinking`` on the
  reasoning channel) has them say ``keep=1``, and its message_end leaves out an extra.content
  that is their text (``extra=stream``), as a streamed message's does.

Chunk boundaries are the chunker's, so the decoder gives exactly the Messages today's form gives.
Others get today's form, byte for byte.

Without tag support declared by the recipient, streams are serialised (one open at a time, other
messages' text waits, order within each message kept). With it, they interleave as produced.

Batching (each ChatMessage is a signed envelope). Appends of a string to ``props.content`` of a
type carried as metadata (``thinking`` shared on the reasoning channel, custom types) are buffered
by a TextChunker per message like text and sent as one merged delta per chunk; a message_end's
``chunk_count`` counts those merged deltas. Groups that are only metadata (events, tool calls,
loading, merged deltas...) do not go alone at once: they wait, in order, and ride with the next
ChatMessage that carries content, or go on their own once the oldest has waited ``meta_delay``
seconds (:attr:`ChatEncoder.next_deadline` says when; :meth:`ChatEncoder.poll` sends them), and
always at stream_end, :meth:`ChatEncoder.end_streams` and :meth:`ChatEncoder.close`. To a plain
asker every ChatMessage shows something (text or a resource): its metadata waits for the next
text however long, so a client that reads only the first ChatMessage reads the answer's start.
Groups go on the wire in the order they were produced: waiting never reorders them.

Where each part lives: :mod:`.wire` (tags, ids, request helpers, :func:`coalesce`),
:mod:`.parse` (:func:`parse_chat`), :mod:`.encoder` (lifecycle), :mod:`.content` (what each
content Message becomes: the withholding policy), :mod:`.messages` (per-message chunking),
:mod:`.render` (metadata and what a plain peer reads), :mod:`.plain_order` (serialisation for plain
peers), :mod:`.batching` (batching, ``meta_delay``), :mod:`.decoder`, :mod:`.reorder` (duplicates,
reorder window, gaps), :mod:`.delivery` (redelivery, replay, gap repair, liveness),
:mod:`.tagged`, :mod:`.streams` (chat streams, untagged content), :mod:`.state` (what the
decoder keeps, under :mod:`.limits`; :mod:`.bounded`; :mod:`.sizes`, what its caps count),
:mod:`.lines` (the wire as ChatMessage JSON lines, both ways: what ``convert --to chat`` and
``decode --from chat`` use).
"""

from __future__ import annotations

from agent_stream.adapters.chat.decoder import ChatDecoder
from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.adapters.chat.encoder import ChatEncoder
from agent_stream.adapters.chat.limits import DecoderLimits
from agent_stream.adapters.chat.parse import parse_chat
from agent_stream.adapters.chat.wire import (
    CHAT_CHUNKER_DEFAULTS,
    LEAN_GATHER,
    PROTOCOL_VERSION,
    TAG_KEY,
    coalesce,
    conversation_of,
    is_tagged_request,
    opens_session,
    request_tags,
    requested_channels,
    stream_id_for,
)

__all__ = [
    "CHAT_CHUNKER_DEFAULTS",
    "LEAN_GATHER",
    "PROTOCOL_VERSION",
    "TAG_KEY",
    "ChatDecoder",
    "ChatEncoder",
    "DecoderLimits",
    "DeliveryPolicy",
    "coalesce",
    "conversation_of",
    "is_tagged_request",
    "opens_session",
    "parse_chat",
    "request_tags",
    "requested_channels",
    "stream_id_for",
]
