"""One hierarchical reply, written once with the StreamWriter, shown in every wire format.

The reply: a block with thinking and a tool call, two parallel threads writing at the same time,
then a long answer streamed word by word. Run it to see each format:

    python examples/formats_demo.py              # every format, one after the other
    python examples/formats_demo.py openai       # just one (native, openai, channels, agui,
                                                 # aisdk, a2a, chat)
    python examples/formats_demo.py --markdown > docs/formats.md

Timestamps and durations are pinned so the output is the same on every run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_stream import Message, StreamWriter, ThreadScope, collect, tool_call
from agent_stream.commands import formats as fmt

PINNED_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
ANSWER = (
    "Paris is sunny at 25°C, while Lyon expects light rain this evening. "
    "Take sunglasses for the afternoon and an umbrella for the trip back."
)


async def reply(out: StreamWriter) -> None:
    async with out.block("llm", label="Plan") as b:
        async with b.message("thinking") as m:
            await m.append("The user wants two cities. ")
            await m.append("I will look both up at once.")
        await b.send(
            tool_call(id="call_1", name="get_weather", arguments='{"cities": ["Paris", "Lyon"]}')
        )

    async def city(th: ThreadScope, name: str, words: list[str]) -> None:
        async with th.block("tool", label=name) as b, b.message("text") as m:
            for w in words:
                await m.append(w)
                await asyncio.sleep(0)  # let the other thread write in between

    async def paris(th: ThreadScope) -> None:
        await city(th, "Paris", ["Paris: ", "sunny, ", "25°C. "])

    async def lyon(th: ThreadScope) -> None:
        await city(th, "Lyon", ["Lyon: ", "light ", "rain. "])

    await out.parallel(paris, lyon)
    async with out.block("llm", label="Answer") as b, b.message("text") as m:
        for i, w in enumerate(ANSWER.split(" ")):
            await m.append(w if i == 0 else " " + w)
    out.usage = {"prompt_tokens": 42, "completion_tokens": 57, "total_tokens": 99}


def _pin(m: Message) -> Message:
    data = m.event_data
    if not data or not ({"timestamp", "duration_ms"} & data.keys()):
        return m
    data = dict(data)
    if "timestamp" in data:
        data["timestamp"] = PINNED_NS
    if "duration_ms" in data:
        data["duration_ms"] = 0
    return m.model_copy(update={"props": {**(m.props or {}), "data": data}})


def build() -> list[Message]:
    """The reply as Messages (request id ``req-1``, timestamps pinned)."""
    return [_pin(m) for m in asyncio.run(collect(reply, request_id="req-1"))]


def formats() -> dict[str, tuple[str, str, Any]]:
    """name -> (title, how it is made, encode function)."""
    ns = argparse.Namespace(
        conversation="demo", include_usage=True, model="agent-stream", channels=None, sse=False
    )
    out: dict[str, tuple[str, str, Any]] = {
        "native": (
            "Native (CUI) JSONL",
            "agent-stream convert --to cui",
            lambda msgs: fmt.encode_cui(msgs, ns),
        ),
        "openai": (
            "OpenAI chat.completion.chunk SSE",
            "agent-stream convert --to openai --include-usage",
            lambda msgs: fmt.encode_openai(msgs, ns),
        ),
        "channels": (
            "Multi-channel JSONL (default policy: no reasoning)",
            "agent-stream convert --to channels",
            lambda msgs: fmt.encode_channels(msgs, ns),
        ),
        "agui": (
            "AG-UI events (SSE)",
            "agent-stream convert --to agui",
            lambda msgs: fmt.encode_agui(msgs, ns),
        ),
        "aisdk": (
            "Vercel AI SDK UI message stream (SSE)",
            "agent-stream convert --to aisdk",
            lambda msgs: fmt.encode_aisdk(msgs, ns),
        ),
    }
    if importlib.util.find_spec("a2a") is not None:  # the optional extra a2a (a2a-sdk)
        out["a2a"] = (
            "A2A message/stream responses (JSON-RPC over SSE)",
            "agent-stream convert --to a2a --conversation demo",
            lambda msgs: fmt.encode_a2a(msgs, ns),
        )
    if importlib.util.find_spec("agent_stream.adapters.chat") is not None:
        out["chat"] = (
            "uAgents chat protocol (ChatMessage JSON, one a line)",
            "agent-stream convert --to chat",
            lambda msgs: fmt.encode_chat(msgs, ns),
        )
    return out


def render(name: str, msgs: list[Message]) -> str:
    return "".join(formats()[name][2](msgs))


MARKDOWN_HEAD = """# One reply in every format

The same hierarchical reply — a block with **thinking** and a **tool call**, **two parallel
threads** (Paris and Lyon, writing at the same time), then a **long answer** streamed word by
word — written once with the `StreamWriter` and encoded by each adapter. Generated by
[`examples/formats_demo.py`](../examples/formats_demo.py) (`python examples/formats_demo.py
--markdown > docs/formats.md`); timestamps are pinned.

```python
{source}
```

What to look for:

- **Native** is the Message DSL itself: every chunk with its ids, lifecycle events included.
- **OpenAI** has one `content` string, so the two threads are sent one after the other (Paris
  whole, then Lyon, held while Paris streamed): the client's text equals the transcript's text.
  Thinking goes to `reasoning_content`, and so does the agent's own tool call, as a progress line
  (`⚙ get_weather(...)`: the agent ran it, the client is not asked to); exactly one chunk
  carries `finish_reason`, the usage chunk comes last, then `[DONE]`.
- **Channels** keeps the threads apart by `message_id`/`thread_id` on one `text` channel; the
  reasoning is not sent at all (the default policy), and every message ends with `message.end`.
- **AG-UI** interleaves the two text messages by id, maps blocks to steps and thinking to a
  reasoning span, and closes everything before `RUN_FINISHED`.
- **AI SDK** opens a step per block (the two threads share one step, as the SDK's steps do not
  nest), interleaves the threads' text parts by id, sends the tool call as an agent-side
  (`providerExecuted`) tool with its parsed input, and ends with `finish` (usage in
  `messageMetadata`) and `[DONE]`.
- **A2A** is one Task (`contextId` the conversation): every message is one artifact, created by
  its first event, extended with `append` and closed by an empty `lastChunk`; the tool call is a
  DataPart, blocks and threads are `working` status updates, and the last status update is
  `completed` (`final`, usage in its metadata).
- **MCP** (the gateway's `/mcp`, not a `convert` format) is one `tools/call`: each piece of text
  and a line per step (`[sub-agent Researcher]`, `[tool call get_weather] {...}`) come as
  `notifications/progress` on the call's stream, and the result is the texts (the threads one
  after the other); an error, a cancel or a cut reply is `isError: true`
  ([wires-aisdk-a2a.md](wires-aisdk-a2a.md#mcp-the-gateways-mcp)).
"""


MARKDOWN_RULES = """
## The rules of each wire

Every encoder is pure (`feed(msg)` -> wire objects, `close()` closes anything still open and
sends the final event once; the module's `frame_sse` / `frame_jsonl` make the text), needs no
message_start/message_end (a message opens at its first chunk and closes at its message_end, at
the end of its block or thread, or at the stream's end), and is picked by `accept` in
`agent_stream.adapters.routing` (`encoder_for`, `frame_for`):

| `accept`                     | wire     | content type         |
| ---------------------------- | -------- | -------------------- |
| `standard`, `openai`         | OpenAI   | text/event-stream    |
| `cui-web`                    | native   | text/event-stream    |
| `cui-native`, `cui-desktop`, `cui` | native | application/x-ndjson |
| `agui`                       | AG-UI    | text/event-stream    |
| `channels`                   | channels | application/x-ndjson |
| `aisdk`                      | AI SDK   | text/event-stream (*) |
| `a2a`                        | A2A      | text/event-stream    |
| `chat`                       | ChatMessage JSON lines | application/x-ndjson |

(*) with the response header `x-vercel-ai-ui-message-stream: v1`.

Each wire is described once, in `agent_stream.adapters.registry`: its name, the `accept`
values the spec gives it and the framing each selects, its encoder and options, its framings
(SSE, JSON lines) with their content types, the response headers its clients want, and its line
decoder if it can be read back. Routing by `accept`, `convert --to` / `decode --from`
(`agent_stream.commands.formats` only maps the command's arguments to a wire's options) and the
gateway's `/v1/stream?accept=` all read that table, so they offer the same wires and write the
same bytes. Adding a wire is its module plus one `Wire(...)` entry:

```
Wire("agui", "AG-UI events as SSE",
     "agent_stream.adapters.agui:AGUIEncoder", {"sse": "agent_stream.adapters.agui:frame_sse"},
     (Option("thread_id"), Option("run_id")), accept={"agui": None})
```

References are `module:attribute` strings, imported when the wire is first used, so a missing
optional extra matters only to its wire.

`writer_for(accept, write)` is a StreamWriter whose Messages go out in that wire through the async
`write(text)`; `sink_for(accept, write)` is the same as a plain sink. `chat` through a writer is
the CLI's form: deterministic ids, one clock value, a recipient without tag support.

### OpenAI (`OpenAIEncoder`, `convert --to openai`)

- One `id` per completion (`chatcmpl-<request_id>`), `role: "assistant"` on the first chunk only,
  text as `content`, thinking and loading as `reasoning_content`, refusal as `refusal`,
  image/audio/video as markdown links in `content`; action, custom types and events are not sent.
- Tool calls (`tool_calls=`, `convert --tool-calls`): by default (`agent`) the agent's own calls
  are progress, not requests: each is a line `⚙ name(arguments)` in `reasoning_content` when its
  message ends, each `tool_result` a line `✓ name → content`; no `tool_calls` are ever sent.
  With `client` they are `tool_calls[{index, id, type, function{name, arguments}}]` (id, type
  and name on the first fragment of an index, sent only once the name is known, then argument
  fragments). A call that ends nameless is named `tool`; an id or name set after the first
  fragment cannot be sent; both are warned about.
- Exactly one chunk carries `finish_reason`: stream_end's `finish_reason` when it is one OpenAI
  knows (`stop`, `length`, `tool_calls`, `content_filter`, `function_call`; never `tool_calls`
  with the `agent` policy), else `tool_calls` when the last content was a tool call sent as
  `tool_calls`, else `stop`. With `include_usage`, when the stream's usage is known, a last chunk
  with `choices: []` and `usage` follows (no usage, no chunk: zeros are never invented); then
  `data: [DONE]`.
- A stream that ends without stream_end (the encoder is closed first) did not complete: the
  client gets an error object with code `incomplete`, then `[DONE]`, never a finish_reason.
- An `error` Message is sent at once as `data: {"error": {"message", "code"}}` (the `openai`
  package raises it as `APIError`), then only `data: [DONE]`. Except inside a sub-agent (an open
  block of type `agent`, or a block nested in one): that error fails the sub-agent, not the
  reply, which its caller may go on with, so it is a progress line `✗ name → message` in
  `reasoning_content` (name: the block's `agent_name`, else its label) and the stream ends as its
  stream_end says. A stream_end with status
  `error`/`cancelled` and no earlier error Message sends such an object with its error text (or
  "the stream ended with an error" / "the stream was cancelled"; code = the status).
- **One content string.** Messages that would interleave on one field (two threads writing text at
  once) are sent one after the other in order of first appearance: the first streams live, the
  others are held and sent whole when it ends. The client's `content` equals the transcript's text.
- **A thread's order.** Before a message goes on, the earlier messages of its thread that came
  whole (one chunk, no message_start) end, and so do the agent's tool calls and results (their
  lines are written at their end): a tool call and its result sent before the answer show
  before it, and an ended tool line does not wait behind another thread's unfinished one.
- **Rewrites.** A client can only append. When a replace/merge/set changes a message's text: if the
  new text extends what the client has of that message it receives the extension; otherwise it
  receives a line break and the new text in full (its text ends with the message's current text;
  what it already showed cannot be taken back). A held message is sent in its final state, so
  rewrites there are exact. Changes to other props are not shown. Tool-call arguments can only
  grow: a rewrite that does not extend them is dropped (with a warning).

### Multi-channel JSONL (`ChannelsEncoder`, `convert --to channels [--channels LIST]`)

One object a line in the spec's `data` envelope: `{"channel", "type", "data"}`; every message
event's `data` has `message_id` (and `thread_id`/`block_id` when set), so concurrent messages on a
channel never share a buffer.

| channel    | types                                                              |
| ---------- | ------------------------------------------------------------------ |
| text       | `message.delta`/`.snapshot`, `refusal.delta`/`.snapshot`, `media`, |
|            | `user_input`                                                       |
| reasoning  | `thinking.delta`, `thinking.snapshot`                              |
| tool       | `tool_call.started`, `tool_call.arguments.delta`,                  |
|            | `tool_call.completed`                                              |
| structured | `structured` (custom types: the DSL chunk), `action`               |
| citation   | `citation` (custom type `citation`)                                |
| status     | `status` (loading, whole text), `stream.start`, `block.*`,         |
|            | `thread.*`, `event`, `stream.end`                                  |
| error      | `error`                                                            |

`*.delta` appends, `*.snapshot` replaces the message's text (a rewrite is exact here). Every
message ends with `message.end {status, chunk_count}` on its own channel; a type change that moves
a message to another channel ends it on the old one with status `retyped` and sends it whole on
the new one (a change within a channel just goes on). The channel policy is applied by the
sender: the recipient gets the listed channels (default: all but `reasoning`); a message's
events, its `message.end` included, are dropped with its channel; `stream.end` and every `error`
event are never dropped. `tool_call.started` waits until the call's name is known (a call that
ends nameless is named `tool`); `tool_call.completed` carries the final name and arguments. A
stream that ends without stream_end ends its open messages and `stream.end` with status
`incomplete`.

### AG-UI (`AGUIEncoder`, `convert --to agui`)

stream -> `RUN_STARTED` (`protocolVersion` `1.0`) ... `RUN_FINISHED` with outcome `success`
(`RUN_ERROR` for status error or an `error` Message, and with code `incomplete` for a stream
that ends without stream_end; outcome `cancelled` for a cancelled stream; usage as
`TokenUsage`, only when known); a completed stream that asked its asker (`user_input`: an
approval, a question) ends paused: outcome `interrupt` with one interrupt per question (`id`:
its card's `card_id`, `reason` `tool_approval` or `input_required`, `message`, `toolCallId` of
the call an approval is about, `responseSchema` for a form card; see the gateway guide for the
resume), block -> `STEP_STARTED`/
`STEP_FINISHED`, a block of type `agent` (a relayed or a framework's sub-agent) also ->
`SUBAGENT_STARTED` (name: its `agent_name`; nested by `parentSubagentRunId`) and
`SUBAGENT_FINISHED`, or `SUBAGENT_ERROR` when it fails, is cancelled or has an `error` Message
(which then fails that sub-agent, not the run), text and refusal ->
`TEXT_MESSAGE_START/CONTENT/END`, thinking -> `REASONING_START`,
`REASONING_MESSAGE_START/CONTENT/END`, `REASONING_END`, tool_call -> `TOOL_CALL_START/ARGS/END`
(START once the name is known; a call that ends nameless is named `tool`), `tool_result` ->
`TOOL_CALL_RESULT`, custom types -> `ACTIVITY_SNAPSHOT` then
`ACTIVITY_DELTA` with RFC 6902 patches built against what the client holds (`add` where a path
is missing, `replace` only where it exists, `add .../-` to extend a list; a delta that cannot
apply is dropped), everything else
(loading, media, action, card, events, thread_start/thread_end) -> `CUSTOM`. Events are the
`ag_ui.core` models, encoded by `ag_ui.encoder.EventEncoder`. The order is what AG-UI clients
enforce: `RUN_STARTED` first, no content without its start, no second start for an open id,
nothing after `RUN_ERROR`, nothing open at `RUN_FINISHED`/`RUN_ERROR`; items of concurrent threads
interleave by id. Within a thread the events follow the stream: before a message goes on, the
earlier ones that came whole end, and so do tool calls and results (`TOOL_CALL_END`,
`TOOL_CALL_RESULT`); a result first ends its call.

### Native (`CUIEncoder`, `convert --to cui [--sse]`)

The Message JSON itself, one a line or one SSE event each. `close()` adds the final stream_end if
the input did not end the stream: with status `error` ("the stream is incomplete") when it was
closed without a status.

### AI SDK UI message stream (`AISDKEncoder`, `convert --to aisdk`)

SSE `data:` lines of UI message chunks, then `data: [DONE]`; the response also needs the header
`x-vercel-ai-ui-message-stream: v1` (`aisdk.HEADERS`). stream -> `start` ... `finish`
(`error` then `finish` for status error, `abort` for cancelled, `error` and no `finish` for a
stream that ends without stream_end), block -> `start-step`/`finish-step`, text and refusal ->
`text-start/-delta/-end`, thinking -> `reasoning-start/-delta/-end`, tool_call ->
`tool-input-start/-delta/-available` (`providerExecuted`, sent once the name is known),
`tool_result` -> `tool-output-available`, media -> `file`, an `error` Message -> `error`
(inside a sub-agent: a `data-error` part, and the reply goes on), a pause for a tool's approval
-> `tool-approval-request` (ai 6; ai 5, `ai_version=5`: a `data-user_input` part), citations ->
`source-url` / `source-document`, the model -> `message-metadata`, others -> `data-<type>`
parts. The whole mapping: [wires-aisdk-a2a.md](wires-aisdk-a2a.md).

### A2A (`A2AEncoder`, `convert --to a2a`, `decode --from a2a`)

JSON-RPC `message/stream` responses as SSE, made of `a2a-sdk`'s A2A 0.3 models (extra `a2a`;
the same events as A2A 1.0, `{"statusUpdate": ...}` with `TASK_STATE_*`, through
`agent_stream.adapters.a2a.versions`, which is what the gateway's 1.0 clients get). One
reply is one Task (`contextId` the conversation, `--conversation`); each message is one
Artifact built with `append`/`lastChunk`, text, refusal and thinking as TextParts, tool calls
and custom types as DataParts, media as FileParts; lifecycle and progress are `working` status
updates; the last is `completed`, `failed` or `canceled` (`failed` for a stream that ends
without stream_end). A question (`user_input`) ends the task `input-required`, its card (a
`card` prop) as a data part. `A2ADecoder` reads it back, and reads A2A 1.0 events too. The
whole mapping, and what the wire cannot carry: [wires-aisdk-a2a.md](wires-aisdk-a2a.md).

What each wire does with tool calls is one table: [tool-calls.md](tool-calls.md).

### From an OpenAI-compatible server (`agent_stream.sources.openai.OpenAIModel`)

`await OpenAIModel(base_url, api_key, model)(question, out)` calls `chat.completions.create(
stream=True)` through the `openai` package (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL when not
given) and writes one `llm` block: a new message whenever the kind switches between
`reasoning_content`, `content`, `refusal` and each tool call; tool-call fragments merged by id
(by index when there is none); finish_reason and usage go to the stream's end. HTTP errors, a cut
connection, malformed chunks and timeouts end the open messages with status `error` and add an
error Message the user can read; what arrived before stays. `OpenAIDecoder` is the same decoding
as a pure function of chunk dicts, and `agent-stream decode --from openai` reads SSE text.
"""


def markdown(msgs: list[Message]) -> str:
    src = Path(__file__).read_text(encoding="utf-8")
    start = src.index("async def reply")
    body = src[start : src.index("def _pin")].rstrip()
    parts = [MARKDOWN_HEAD.replace("{source}", body)]
    for name, (title, how, _) in formats().items():
        lang = "json" if name in ("native", "channels", "chat") else "text"
        parts.append(f"\n## {title}\n\n`{how}`\n\n```{lang}\n{render(name, msgs).rstrip()}\n```\n")
    parts.append(MARKDOWN_RULES)
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("format", nargs="?", help="one of: " + ", ".join(formats()))
    p.add_argument("--markdown", action="store_true", help="write docs/formats.md's content")
    args = p.parse_args(argv)
    msgs = build()
    if args.markdown:
        sys.stdout.write(markdown(msgs))
        return 0
    names = [args.format] if args.format else list(formats())
    for name in names:
        if name not in formats():
            p.error(f"unknown format {name!r}")
        if len(names) > 1:
            print(f"===== {formats()[name][0]} =====")
        sys.stdout.write(render(name, msgs))
        if len(names) > 1:
            print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
