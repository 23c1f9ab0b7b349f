"""The site's generated pages follow the code: the limits tables, the CLI reference and the wire
list are rendered from the settings classes, the argparse parsers and the wire registry."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def generated() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generated", ROOT / "docs" / "generated.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_changed_default_shows_in_the_limits_page() -> None:
    from agent_stream.uagents import GuardSettings

    gen = generated()
    assert f"| `max_queued` | `{GuardSettings().max_queued}` |" in gen.render_limits()
    # a copy of the class with one default changed: the page follows it
    changed = dataclasses.make_dataclass(
        "GuardSettings",
        [
            (
                f.name,
                f.type,
                dataclasses.field(default=777 if f.name == "max_queued" else f.default),
            )
            for f in dataclasses.fields(GuardSettings)
        ],
        frozen=True,
    )
    page = gen.render_limits(
        [("Protection.guard", "copy", "GuardSettings")], load=lambda module, name: changed
    )
    assert "| `max_queued` | `777` |" in page
    assert f"`{GuardSettings().max_queued}`" not in page.split("max_queued")[1].split("\n")[0]


def test_every_settings_class_and_field_is_on_the_limits_page() -> None:
    gen = generated()
    page = gen.render_limits()
    for heading, module, name in gen.LIMIT_CLASSES:
        cls = getattr(importlib.import_module(module), name)
        assert f"### `{heading}`" in page
        for f in dataclasses.fields(cls):
            assert f"| `{f.name}` |" in page, (name, f.name)


def test_every_limits_row_says_what_it_bounds() -> None:
    """No field of the limits page has an empty meaning cell: each settings field is
    documented (an ``Attributes:`` line or a comment on or above it)."""
    page = generated().render_limits()
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert rows
    empty = [row for row in rows if not row.rstrip().rstrip("|").rsplit("|", 1)[-1].strip()]
    assert not empty, "limits rows without a meaning:\n" + "\n".join(empty)


def test_a_field_documented_by_its_comment_has_that_meaning() -> None:
    gen = generated()
    from agent_stream.adapters.chat.limits import DecoderLimits

    table = gen.limits_table(DecoderLimits)
    # a comment on the field's line, and comment lines just above it
    assert "| `gap_timeout` | `2.0` | seconds a gap is waited for, then reported |" in table
    assert "| `reorder_window` | `64` | ordering: held-back ChatMessages per" in table


def test_a_field_documented_in_attributes_has_that_meaning() -> None:
    gen = generated()
    from agent_stream.uagents import GuardSettings

    table = gen.limits_table(GuardSettings)
    assert "| `max_envelope_bytes` | `4194304` (4 MiB) | an HTTP body over this: 413. |" in table
    # an Attributes line continued on the next one is read whole
    assert "| `trusted_senders` | `frozenset()` | senders trusted with more" in table
    assert "many users): their own rate instead. |" in table


def test_a_dataclass_is_required() -> None:
    with pytest.raises(TypeError, match="not a dataclass"):
        generated().limits_table(int)


def test_the_cli_reference_follows_the_parsers() -> None:
    from agent_stream.cli import COMMANDS, build_parser

    gen = generated()
    page = gen.render_cli()
    for name in COMMANDS:
        assert f"### `agent-stream {name}`" in page
    assert "`--max-line-bytes N`" in page
    parser = build_parser()
    sub = next(
        a for a in parser._actions if isinstance(a, __import__("argparse")._SubParsersAction)
    )
    sub.choices["ask"].add_argument(
        "--brand-new", metavar="X", default="7", help="an option added to a copy of the parser"
    )
    assert "| `--brand-new X` | `7` | an option added to a copy of the parser |" in gen.render_cli(
        parser
    )


def test_the_wire_list_is_the_registry() -> None:
    from agent_stream.adapters.registry import wires

    page = generated().render_wires()
    rows = [ln for ln in page.splitlines() if ln.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == [w.name for w in wires()]


def test_an_unknown_marker_is_an_error() -> None:
    gen = generated()
    with pytest.raises(KeyError, match="nope"):
        gen.expand("<!-- generated:nope -->")
    assert "| `chat` |" in gen.expand("before\n<!-- generated:wires -->\nafter")


def test_the_site_builds_strict_with_the_generated_pages(tmp_path: Path) -> None:
    """``mkdocs build --strict`` (what ``make docs`` runs) passes, and the built limits page
    carries the defaults of the code."""
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (pip install --group docs)")
    from agent_stream.adapters.chat.limits import DecoderLimits

    site = tmp_path / "site"
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--quiet", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
    )
    assert done.returncode == 0, done.stderr
    limits = (site / "reference" / "limits" / "index.html").read_text(encoding="utf-8")
    assert "<code>max_seen_ids_total</code>" in limits
    assert f"<code>{DecoderLimits().max_seen_ids_total}</code>" in limits
    assert "generated:" not in limits
    # the API reference has an entry for every public name of every public package
    pages = {
        "agent_stream": "agent_stream",
        "agent_stream.uagents": "uagents",
        "agent_stream.adapters": "adapters",
        "agent_stream.sources": "sources",
        "agent_stream.gateway": "gateway",
    }
    for package, page in pages.items():
        html = (site / "api" / page / "index.html").read_text(encoding="utf-8")
        public = importlib.import_module(package).__all__
        missing = [
            name
            for name in public
            if f'id="{package}.{name}"' not in html and f'id="{package}.{name}.{name}"' not in html
        ]  # a module's namesake
        assert missing == [], (package, missing)
        # Sphinx roles in docstrings are shown as code, not as written
        roles = re.findall(r":(?:class|func|meth|mod|attr|data|exc):<code>", html)
        assert roles == [], package
    uagents = (site / "api" / "uagents" / "index.html").read_text(encoding="utf-8")
    assert "(see <code>channels_for</code>)" in uagents  # ChannelPolicy's :func:`channels_for`
    shutil.rmtree(site)


def test_sphinx_roles_become_code_spans() -> None:
    spec = importlib.util.spec_from_file_location("griffe_roles", ROOT / "docs" / "griffe_roles.py")
    assert spec and spec.loader
    roles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roles)
    text = (
        "See :class:`~agent_stream.uagents.Reply`, :func:`protect`, :mod:`.edge`, "
        ":meth:`Reply.wait` and :py:data:`REPLIES`; ``:class:`` alone stays."
    )
    assert roles.plain(text) == (
        "See `Reply`, `protect`, `edge`, `Reply.wait` and `REPLIES`; ``:class:`` alone stays."
    )


def test_the_terminal_picture_is_the_screen_a_live_rendering_leaves() -> None:
    """What ``make docs-images`` draws: frames a live rendering redraws (cursor up, erase line)
    are replaced, colours are kept."""
    spec = importlib.util.spec_from_file_location(
        "make_images", ROOT / "docs" / "images" / "make_images.py"
    )
    assert spec and spec.loader
    images = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(images)
    raw = (
        "\x1b[1mThinking\x1b[0m\r\nframe one\r\n\x1b[1A\r\x1b[2K\x1b[32mframe two\x1b[0m"
        "\r\n\x1b[?25h\x1b]0;title\x07"
    )
    shown = images.screen_ansi(raw)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert plain.splitlines() == ["Thinking", "frame two"]
    assert "\x1b[32mframe two" in shown and "\x1b[1mThinking" in shown
