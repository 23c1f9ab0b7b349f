"""Write a hierarchical stream with StreamWriter and print it as Message JSONL.

python examples/hierarchical_stream.py | agent-stream assemble --indent 1
"""

from __future__ import annotations

import asyncio
import sys

from agent_stream import Message, StreamWriter, ThreadScope, tool_call


async def get_weather(t: ThreadScope) -> str:
    async with t.message("text") as m:
        await m.append("Weather: Sunny")
        await m.append(", 25°C")
    return "sunny"


async def get_news(t: ThreadScope) -> str:
    await t.text("News: all quiet. ")
    return "quiet"


async def main() -> None:
    async def sink(msg: Message) -> None:
        sys.stdout.write(msg.to_json() + "\n")

    async with StreamWriter(sink) as out:
        async with out.block("llm", label="Plan") as b:
            async with b.message("thinking") as m:
                for piece in ("The user wants ", "weather and news; ", "call both tools."):
                    await m.append(piece)
            await b.send(tool_call(id="call_1", name="get_weather", arguments='{"city":"Paris"}'))
        async with out.block("tool", label="Tools") as b:
            await b.parallel(get_weather, get_news)
        async with out.block("llm", label="Answer") as b, b.message("text") as m:
            for piece in ("Here is ", "your summary. ", "It is sunny ", "and quiet."):
                await m.append(piece)


if __name__ == "__main__":
    asyncio.run(main())
