"""mkdocs hooks: the generated parts of the pages, and links out of the docs folder.

A page's ``<!-- generated:NAME -->`` marker becomes ``docs/generated.py``'s rendering of NAME
(the limits, CLI and wire tables, read from the code at build time). A link from a page to a
file of the repository outside ``docs/`` (an example, a test) resolves on GitHub but not in the
site: it becomes the file's path as code when the file exists (a missing one is left, so the
strict build reports it).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generated import ROOT, expand

_LINK = re.compile(r"\[([^\]]+)\]\(((?:\.\./)+[^)#\s]+)\)")


def _outside(page_path: Path) -> Any:
    def one(m: re.Match[str]) -> str:
        target = (page_path.parent / m.group(2)).resolve()
        docs = ROOT / "docs"
        if docs in target.parents or not target.exists():
            return m.group(0)
        label = m.group(1)
        rel = target.relative_to(ROOT).as_posix()
        return label if label.strip("`") == rel else f"{label} (`{rel}`)"

    return one


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Expand the generated parts and unlink links that leave the docs folder."""
    markdown = expand(markdown)
    return _LINK.sub(_outside(Path(page.file.abs_src_path)), markdown)
