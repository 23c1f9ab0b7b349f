"""Chat agents written the way Fetch.ai's templates and examples write them (uagents alone, no
agent_stream but for the one line that resolves local askers: ``resolve=local_resolver()``).

``asi1``   the ASI1 agent template: acknowledges, answers StartSessionContent with a
           ``MetadataContent({"attachments": "true"})`` message, then (a model call later,
           ``--delay`` seconds) the answer, then EndSessionContent unless ``--no-end-session``.
``imagen`` the image example: "Generating your image..." at once, the image (a
           ResourceContent) ``--delay`` seconds later, no EndSessionContent.

``--stock`` builds the agent exactly as the docs do (but for listening on 127.0.0.1 only):
offline, uagents spends ~33 s on its Almanac and Agentverse calls before its startup handlers
run, while its server already listens and answers. Without it those network calls are skipped
(as tests/peers/plain_agent.py does) so that it starts at once. Prints ``READY <address>
<endpoint>`` from its startup handler.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import uuid
from datetime import datetime, timezone

from uagents import Agent, Context, Protocol
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    EndSessionContent,
    MetadataContent,
    Resource,
    ResourceContent,
    StartSessionContent,
    TextContent,
    chat_protocol_spec,
)

from agent_stream.uagents import local_resolver

ANSWER = "Streams between agents should be cut at sentence boundaries."
IMAGE = "https://images.example.invalid/cat.png"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=("asi1", "imagen"))
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seed", required=True)
    p.add_argument("--delay", type=float, default=2.0)
    p.add_argument("--no-end-session", action="store_true")
    p.add_argument("--stock", action="store_true")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    import sys

    import uagents.asgi

    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from plain_agent import go_offline

    if args.stock:
        uagents.asgi.HOST = "127.0.0.1"  # tests listen on loopback only
    else:
        go_offline()
    agent = Agent(
        name=f"template-{args.role}",
        seed=args.seed,
        port=args.port,
        endpoint=[f"http://127.0.0.1:{args.port}/submit"],
        resolve=local_resolver(),  # the one line that changes
        log_level=logging.WARNING,
    )
    protocol = Protocol(spec=chat_protocol_spec)

    def chat(*content: object) -> ChatMessage:
        return ChatMessage(
            timestamp=datetime.now(timezone.utc), msg_id=uuid.uuid4(), content=list(content)
        )

    @protocol.on_message(ChatMessage)
    async def handle(ctx: Context, sender: str, msg: ChatMessage) -> None:
        print("GOT " + " ".join(type(item).__name__ for item in msg.content), flush=True)
        await ctx.send(sender, ChatAcknowledgement(acknowledged_msg_id=msg.msg_id))
        if args.role == "asi1":
            if any(isinstance(item, StartSessionContent) for item in msg.content):
                await ctx.send(sender, chat(MetadataContent(metadata={"attachments": "true"})))
            await asyncio.sleep(args.delay)  # the model call
            content: list[object] = [TextContent(text=ANSWER)]
            if not args.no_end_session:
                content.append(EndSessionContent())
            await ctx.send(sender, chat(*content))
        else:
            await ctx.send(sender, chat(TextContent(text="Generating your image...")))
            await asyncio.sleep(args.delay)
            image = Resource(uri=IMAGE, metadata={"mime_type": "image/png"})
            await ctx.send(sender, chat(ResourceContent(resource_id=uuid.uuid4(), resource=image)))

    @protocol.on_message(ChatAcknowledgement)
    async def acked(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        return None

    agent.include(protocol, publish_manifest=False)

    @agent.on_event("startup")
    async def ready(ctx: Context) -> None:
        print(f"READY {agent.address} http://127.0.0.1:{args.port}/submit", flush=True)

    agent.run()


if __name__ == "__main__":
    main()
