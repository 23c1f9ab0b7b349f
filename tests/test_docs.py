"""The documents show what the code really produces."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_formats_doc_is_what_the_encoders_write_today() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "formats_demo.py"), "--markdown"],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    doc = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    assert out == doc, ("docs/formats.md is stale: python examples/formats_demo.py --markdown "
                        "> docs/formats.md")


def test_readme_excerpts_of_each_format_are_lines_of_the_formats_doc() -> None:
    """One README excerpt per format of docs/formats.md, each made of lines of that format's
    output there, captioned with the command that makes it."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    doc = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    # each format in the doc: "## title", "`command`", then its output in one code block
    formats = {how: set(body.splitlines()) for how, body in re.findall(
        r"\n## [^\n]+\n\n`(agent-stream convert [^`]+)`\n\n```\w*\n(.*?)```", doc, re.S)}
    wires = {how.split()[3] for how in formats}
    assert wires == {"cui", "openai", "channels", "agui", "aisdk", "a2a", "chat"}
    section = readme[readme.index("### One reply in every format"):
                     readme.index("### A real model")]
    pieces = section.split("```")
    captions, blocks = pieces[0:-1:2], pieces[1::2]  # the text before each block, the block
    assert len(blocks) == len(formats)
    shown = set()
    for caption, block in zip(captions, blocks, strict=True):
        lines = [ln for ln in block.splitlines()[1:] if ln.strip()]
        (how,) = [h for h in formats if f"`{h}`" in caption]
        assert lines and all(ln in formats[how] for ln in lines), how
        shown.add(how)
    assert shown == set(formats)


def test_readme_python_examples_run() -> None:
    """Every README example that needs no agent process or model server runs as written."""
    import contextlib
    import io
    import re

    import pytest

    from agent_stream.errors import InvalidMessage

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    needs_more = ("agent.run()", "run_agent(", "await chat.ask", "OpenAIModel(")
    ran = 0
    namespace: dict[str, object] = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for block in blocks:
            if any(marker in block for marker in needs_more):
                continue
            if "colour" in block:  # shows the error for an unknown field
                with pytest.raises(InvalidMessage, match="colour"):
                    exec(block, namespace)
            else:
                exec(block, namespace)
            ran += 1
    assert ran >= 6
