"""The documents show what the code really produces: their examples run, their links resolve."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "site" not in p.parts)
# an example that needs an agent process, a model server or a framework's model is shown, not run
NEEDS_MORE = ("agent.run()", "run_agent(", "await chat.ask", "OpenAIModel(", "builder.compile")


def test_formats_doc_is_what_the_encoders_write_today() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "formats_demo.py"), "--markdown"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    doc = (DOCS / "formats.md").read_text(encoding="utf-8")
    assert out == doc, (
        "docs/formats.md is stale: python examples/formats_demo.py --markdown > docs/formats.md"
    )


def test_wire_page_excerpts_of_each_format_are_lines_of_the_formats_doc() -> None:
    """One excerpt per format of docs/formats.md on the wires page, each made of lines of that
    format's output there, captioned with the command that makes it."""
    page = (DOCS / "guides" / "wires.md").read_text(encoding="utf-8")
    doc = (DOCS / "formats.md").read_text(encoding="utf-8")
    # each format in the doc: "## title", "`command`", then its output in one code block
    formats = {
        how: set(body.splitlines())
        for how, body in re.findall(
            r"\n## [^\n]+\n\n`(agent-stream convert [^`]+)`\n\n```\w*\n(.*?)```", doc, re.S
        )
    }
    wires = {how.split()[3] for how in formats}
    assert wires == {"cui", "openai", "channels", "agui", "aisdk", "a2a", "chat"}
    section = page[page.index("## One reply in every format") :]
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


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M)


def run_blocks(path: Path) -> int:
    """Run the ``python`` blocks of one document in order, in one namespace; how many ran."""
    from agent_stream.errors import InvalidMessage

    ran = 0
    namespace: dict[str, object] = {"__name__": f"doc_{path.stem}"}
    with contextlib.redirect_stdout(io.StringIO()):
        for block in python_blocks(path):
            if any(marker in block for marker in NEEDS_MORE):
                continue
            if "colour" in block:  # shows the error for an unknown field
                with pytest.raises(InvalidMessage, match="colour"):
                    exec(block, namespace)
            else:
                exec(block, namespace)
            ran += 1
    return ran


def test_readme_python_examples_run() -> None:
    """Every README example that needs no agent process or model server runs as written."""
    assert run_blocks(ROOT / "README.md") >= 1


@pytest.mark.parametrize(
    "page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.relative_to(DOCS).as_posix()
)
def test_page_python_examples_run(page: Path) -> None:
    """Every example of the documentation that needs no agent process, model server or model
    key runs as written (a page's blocks in order, sharing their names)."""
    run_blocks(page)


def test_most_examples_of_the_pages_run() -> None:
    ran = sum(run_blocks(p) for p in PAGES if python_blocks(p))
    assert ran >= 15


def relative_links(path: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [
        t
        for t in re.findall(r"\]\(([^)\s]+)\)", text)
        if not re.match(r"[a-z]+:", t) and not t.startswith("#")
    ]


@pytest.mark.parametrize(
    "doc", [ROOT / "README.md", *PAGES], ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_every_relative_link_resolves(doc: Path) -> None:
    """A link from the README or a page to a file of the repository names one that exists (so
    it resolves on GitHub too; the strict site build checks the anchors)."""
    for link in relative_links(doc):
        target = (doc.parent / link.split("#")[0]).resolve()
        assert target.exists(), f"{doc.relative_to(ROOT)}: {link} does not exist"


def test_the_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 150
