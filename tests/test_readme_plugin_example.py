"""The README's first plugin example runs as written with no internet: it says where it is, and
the `ask` line printed under it reaches it."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from agent_stream.uagents.local._agents import free_port

ROOT = Path(__file__).resolve().parent.parent


def plugin_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### The uAgents plugin") :]
    return re.findall(r"```python\n(.*?)```", section, re.S)[0]


def test_the_first_plugin_example_runs_offline_and_answers(tmp_path: Path) -> None:
    code = plugin_example()
    assert "local_agent(" in code and "run_agent(agent)" in code
    port = free_port()
    assert "port=8001" in code
    script = tmp_path / "echo_agent.py"
    script.write_text(code.replace("port=8001", f"port={port}"), encoding="utf-8")
    env = dict(
        os.environ,
        AGENT_SEED="the echo agent's own secret seed",
        AGENT_STREAM_DIRECTORY=str(tmp_path / "agents.json"),
        PYTHONUNBUFFERED="1",
        # any attempt to reach the internet fails at once instead of waiting
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    threading.Thread(
        target=lambda: [lines.put(ln) for ln in proc.stderr],  # type: ignore[union-attr]
        daemon=True,
    ).start()
    try:
        seen: list[str] = []
        deadline = time.monotonic() + 30.0
        while not any(ln.startswith("  ask it:") for ln in seen):
            seen.append(lines.get(timeout=max(0.1, deadline - time.monotonic())))
        banner = "".join(seen)
        assert "agent 'echo' is running" in banner
        assert f"  endpoint: http://127.0.0.1:{port}/submit" in banner
        assert '  ask it:   agent-stream ask echo "your question"' in banner
        asked = subprocess.run(
            [sys.executable, "-m", "agent_stream", "ask", "echo", "hello streaming world"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env=env,
        )
        assert asked.returncode == 0, asked.stderr
        assert "hello streaming world" in asked.stdout
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_the_quickstart_shows_the_same_plugin_example() -> None:
    """The site's quickstart shows the example this test runs (comments aside)."""
    page = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    shown = re.findall(r"```python\n(.*?)```", page, re.S)[0]

    def code(text: str) -> list[str]:
        lines = (ln.split("  #")[0].rstrip() for ln in text.splitlines())
        return [ln for ln in lines if ln.strip() and not ln.startswith("#")]

    assert code(shown) == code(plugin_example())
