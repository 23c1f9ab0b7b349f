"""`agent-stream demo --team` in a real pseudo-terminal of a given size: the replies are drawn as
markdown wrapped to the terminal's width, and two sub-agents streaming at once never share a
line (what is left on the screen is read through a small terminal model)."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from terminal_screen import screen

ROOT = Path(__file__).resolve().parents[2]


def run_in_terminal(
    argv: list[str], cols: int, rows: int, cwd: Path, timeout: float = 240.0
) -> tuple[int, str]:
    """Run ``argv`` with a pseudo-terminal of ``cols`` x ``rows`` as its stdio; (status, all it
    wrote)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env.update(TERM="xterm-256color", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, close_fds=True
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace")


def test_demo_team_draws_markdown_and_keeps_parallel_agents_apart(tmp_path: Path) -> None:
    status, raw = run_in_terminal(
        [sys.executable, "-m", "agent_stream", "demo", "--team", "--rate", "0"],
        cols=60,
        rows=40,
        cwd=tmp_path,
    )
    assert status == 0, raw[-2000:]
    shown = screen(raw)
    text = "\n".join(shown)
    assert "completed ·" in text
    # Headings, bold and tables are drawn, not shown as markdown source.
    assert not re.search(r"(?m)^\s*#{1,6} ", text)  # no heading markers
    assert not re.search(r"\*\*[A-Za-z]", text)  # no bold markers (`2 ** n` in code is code)
    assert not any(line.lstrip().startswith("|") for line in shown)
    # The answers' lines fit the terminal (the summary and address lines are not markdown).
    # Every line fits the terminal, wrapped between words (the agents' addresses, each one word
    # longer than the line, are folded: they are left out of the word check).
    assert len(shown) > 100
    assert all(len(ln) <= 60 for ln in shown), [ln for ln in shown if len(ln) > 60]
    # The same demo into a pipe (plain text, lines left whole) has every word there is.
    plain = subprocess.run(
        [sys.executable, "-m", "agent_stream", "demo", "--team", "--rate", "0"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert plain.returncode == 0, plain.stderr
    said = set(re.findall(r"[A-Za-z]{2,}", plain.stdout))
    asked = next(i for i, ln in enumerate(shown) if ln.startswith("The client asks"))
    drawn = {w for ln in shown[asked:] for w in re.findall(r"[A-Za-z]{2,}", ln)}
    assert drawn <= said, drawn - said  # no word was cut at the edge of a line
    assert "The client asks the planner: How should agents stream LLM" in text
    # The coder and the chef stream at the same time: each heading is whole on its own line,
    # and no line mixes the two answers.
    assert "  Retrying a flaky HTTP call in Python" in shown
    assert "  A weeknight tomato pasta for four" in shown
    coder, chef = {"retry", "retries", "jitter", "backoff"}, {"pasta", "tomato", "garlic"}
    for line in shown:
        low = set(line.lower().replace(",", " ").split())
        assert not (low & coder and low & chef), line
