"""Assembler throughput: N one-character append deltas to one message, for N = 10^4, 10^5, 10^6.

Linear cost shows as a flat deltas/s column. A naive assembler that rebuilds the string on every
append (props["content"] = props["content"] + d) is timed beside it at the same N for contrast.
Run: python bench/bench_assemble.py
"""

from __future__ import annotations

import time

from agent_stream.assemble import Assembler
from agent_stream.message import Message


def deltas(n: int) -> list[Message]:
    return [
        Message(type="text", message_id="M1", chunk_id=f"C{i}", delta=True, props={"content": "x"})
        for i in range(n)
    ]


def naive(messages: list[Message]) -> str:
    props: dict[str, str] = {"content": ""}
    for m in messages:
        props["content"] = props["content"] + (m.props or {})["content"]
        _ = props["content"]  # a reader that looks between deltas defeats in-place tricks
    return props["content"]


def main() -> None:
    print(f"{'deltas':>10} {'seconds':>9} {'deltas/s':>12} {'naive s':>9} {'naive/s':>12}")
    base = None
    for n in (10**4, 10**5, 10**6):
        msgs = deltas(n)
        asm = Assembler()
        t0 = time.perf_counter()
        for m in msgs:
            asm.feed(m)
        content = asm.transcript.get(None, "M1").content  # type: ignore[union-attr]
        dt = time.perf_counter() - t0
        assert len(content) == n
        t1 = time.perf_counter()
        assert len(naive(msgs)) == n
        dn = time.perf_counter() - t1
        rate = n / dt
        base = base or rate
        print(f"{n:>10,} {dt:>9.3f} {rate:>12,.0f} {dn:>9.3f} {n / dn:>12,.0f}")
    print("linear if deltas/s stays flat as N grows x100")


if __name__ == "__main__":
    main()
