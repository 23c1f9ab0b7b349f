"""Make the documentation's pictures from the real programs (``make docs-images``).

- ``gateway-page.png``: the gateway's web page in headless Chromium (Debian's ``chromium``,
  driven by Playwright) while a reply from ``agent-stream serve`` (the replay model) streams in;
- ``terminal-ask.svg`` and ``terminal-team.svg``: what ``agent-stream ask`` and
  ``agent-stream demo --team`` leave on a 100-column terminal (run in a pseudo-terminal, the
  screen rebuilt from the escape sequences they write, drawn by rich as SVG).

Everything runs on 127.0.0.1 with a local directory of its own; nothing is fetched.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUESTION = "How do agents stream?"
WIDTH, HEIGHT = 100, 60
CSI = re.compile(r"\x1b\[(\??)([0-9;]*)([A-Za-z])")


def screen_ansi(raw: str) -> str:
    """What a terminal shows after ``raw``, as text with its colours (SGR) kept: cursor up,
    erase line, carriage return and line feed are applied."""
    lines: list[list[tuple[str, str]]] = [[]]
    row = col = 0
    sgr = ""
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\x1b":
            if raw.startswith("\x1b]", i):  # a title (OSC): up to BEL or ST
                bel, st = raw.find("\x07", i), raw.find("\x1b\\", i)
                if bel >= 0 and (st < 0 or bel < st):
                    i = bel + 1
                else:
                    i = st + 2 if st >= 0 else len(raw)
                continue
            m = CSI.match(raw, i)
            if m is None:  # another escape (a charset, a keypad mode): skip its introducer
                i += 2
                continue
            private, args, code = m.groups()
            n = int(args) if args.isdigit() else 1
            if not private and code == "m":
                sgr = "" if args in ("", "0") else sgr + m.group(0)
            elif not private and code == "A":
                row = max(0, row - n)
            elif not private and code == "K":
                lines[row] = [] if args == "2" else lines[row][:col]
            elif not private and code == "G":
                col = n - 1
            i = m.end()
            continue
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row += 1
            col = 0
            while len(lines) <= row:
                lines.append([])
        elif ch >= " ":
            line = lines[row]
            while len(line) < col:
                line.append((" ", ""))
            cell = (ch, sgr)
            if col < len(line):
                line[col] = cell
            else:
                line.append(cell)
            col += 1
        i += 1
    out = []
    for line in lines:
        text, last = [], ""
        for ch, style in line:
            if style != last:
                text.append("\x1b[0m" + style)
                last = style
            text.append(ch)
        out.append("".join(text) + "\x1b[0m")
    while out and not re.sub(r"\x1b\[[0-9;]*m", "", out[-1]).strip():
        out.pop()
    return "\n".join(out)


def save_svg(raw: str, path: Path, title: str, head: int = 0, tail: int = 0) -> None:
    """The screen ``raw`` leaves, as an SVG; with ``head``, only its first ``head`` and last
    ``tail`` lines, and a line saying how many were left out between them."""
    from rich.console import Console
    from rich.text import Text

    lines = screen_ansi(raw).split("\n")
    if head and len(lines) > head + tail + 1:
        cut = len(lines) - head - tail
        lines = [*lines[:head], f"\x1b[2m  ... ({cut} more lines)\x1b[0m", *lines[-tail:]]
    console = Console(
        record=True, width=WIDTH, file=io.StringIO(), force_terminal=True, color_system="truecolor"
    )
    console.print(Text.from_ansi("\n".join(lines)))
    console.save_svg(str(path), title=title)


def in_terminal(args: list[str], env: dict[str, str], timeout: float = 120.0) -> str:
    """Everything ``agent-stream ARGS`` writes to a WIDTH-column pseudo-terminal."""
    import pexpect

    child = pexpect.spawn(
        sys.executable,
        ["-m", "agent_stream", *args],
        env=env,
        dimensions=(HEIGHT, WIDTH),
        encoding="utf-8",
        timeout=timeout,
    )
    child.expect(pexpect.EOF)
    child.close()
    return str(child.before)


def wait_for(what: str, ready: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(ready) and ready():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not start within {timeout:.0f} s")


def answers(url: str) -> bool:
    try:
        # straight to 127.0.0.1, whatever proxy the environment names
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url, timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def main() -> int:
    from agent_stream.uagents import free_port

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    work = Path(tempfile.mkdtemp(prefix="agent-stream-images-"))
    env = dict(
        os.environ,
        AGENT_STREAM_DIRECTORY=str(work / "agents.json"),
        PYTHONUNBUFFERED="1",
        TERM="xterm-256color",
        COLUMNS=str(WIDTH),
        LINES=str(HEIGHT),
        NO_PROXY="127.0.0.1,localhost",
    )
    started: list[subprocess.Popen[bytes]] = []
    try:
        port, gw_port = free_port(), free_port()
        log = open(work / "serve.log", "wb")  # noqa: SIM115 (closed with the process)
        started.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agent_stream",
                    "serve",
                    "--port",
                    str(port),
                    "--name",
                    "llm",
                    "--rate",
                    "40",
                    "--reasoning",
                    "--seed",
                    "the pictures' own agent seed",
                ],
                env=env,
                stdout=log,
                stderr=log,
                cwd=work,
            )
        )
        wait_for("agent-stream serve", lambda: b"ask it:" in (work / "serve.log").read_bytes())
        gw_log = open(work / "gateway.log", "wb")  # noqa: SIM115
        started.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agent_stream",
                    "gateway",
                    "--port",
                    str(gw_port),
                    "--agent",
                    "llm",
                ],
                env=env,
                stdout=gw_log,
                stderr=gw_log,
                cwd=work,
            )
        )
        url = f"http://127.0.0.1:{gw_port}"
        wait_for("agent-stream gateway", lambda: answers(url + "/healthz"))

        print("terminal-ask.svg: agent-stream ask")
        raw = in_terminal(["ask", "llm", QUESTION], env)
        save_svg(raw, HERE / "terminal-ask.svg", f'agent-stream ask llm "{QUESTION}"')
        print("terminal-team.svg: agent-stream demo --team")
        raw = in_terminal(["demo", "--team", "--rate", "0"], env, timeout=240)
        save_svg(raw, HERE / "terminal-team.svg", "agent-stream demo --team", head=44, tail=4)

        if chromium is None:
            print("gateway-page.png: skipped, no chromium (apt-get install chromium)")
            return 0
        from playwright.sync_api import sync_playwright

        print("gateway-page.png: the gateway's page in headless chromium")
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=chromium,
                headless=True,
                args=[
                    "--no-sandbox",
                    "--disable-gpu",
                    "--no-first-run",
                    "--disable-background-networking",
                ],
            )
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url + "/")
            page.wait_for_selector("#agent option[value='llm']", state="attached")
            page.select_option("#agent", "llm")
            page.fill("#question", QUESTION)
            page.click("#ask")
            page.wait_for_selector(".threads .thread", timeout=60_000)  # mid-reply
            page.wait_for_timeout(2500)
            page.screenshot(path=str(HERE / "gateway-page.png"))
            browser.close()
        return 0
    finally:
        for proc in started:
            proc.terminate()
        for proc in started:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
