"""The documentation's generated parts, rendered from the code so that they cannot drift.

``docs/hooks.py`` replaces each ``<!-- generated:NAME -->`` marker of a page with
``render(NAME)``; ``tests/test_docs_site.py`` checks that a page follows the code.

- ``limits``: one table per settings dataclass, its fields, defaults and the comment or
  ``Attributes:`` line that documents each field;
- ``cli``: every ``agent-stream`` command's options, read from the argparse parsers;
- ``wires``: the wires of the wire registry;
- ``layers``: the import contracts of pyproject.toml's ``[tool.importlinter]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import io
import re
import sys
import tokenize
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# (heading, where it is imported from, the class's name), in the order the page shows them
LIMIT_CLASSES: tuple[tuple[str, str, str], ...] = (
    ("ChatSettings", "agent_stream.uagents", "ChatSettings"),
    ("ChatSettings.pump", "agent_stream.uagents._settings", "PumpLimits"),
    ("ChatSettings.caps", "agent_stream.uagents._settings", "ReplyLimits"),
    ("ChatSettings.delivery", "agent_stream.uagents._settings", "DeliveryPolicy"),
    ("ChatSettings.sessions", "agent_stream.uagents", "SessionLimits"),
    ("ChatSettings.history", "agent_stream.uagents._settings", "HistoryLimits"),
    ("ChatSettings.quotas", "agent_stream.uagents", "PeerQuotas"),
    ("PeerQuota", "agent_stream.uagents", "PeerQuota"),
    ("Protection", "agent_stream.uagents", "Protection"),
    ("Protection.guard", "agent_stream.uagents", "GuardSettings"),
    ("Protection.lanes", "agent_stream.uagents", "LaneLimits"),
    ("DecoderLimits", "agent_stream.adapters.chat.limits", "DecoderLimits"),
    ("agent-stream gateway", "agent_stream.gateway.config", "GatewayConfig"),
)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _field_notes(cls: type) -> dict[str, str]:
    """What documents each field: its ``Attributes:`` line, else its source comment (on its
    line, or the comment lines just above it)."""
    notes: dict[str, str] = {}
    doc = inspect.getdoc(cls) or ""
    section = re.search(r"^Attributes:\n((?:[ \t]+.*\n?|\n)*)", doc, re.M)
    if section:
        current = None
        for line in section.group(1).splitlines():
            m = re.match(r"\s{2,8}(\w+)(?: \([^)]*\))?: (.*)", line)
            if m and len(line) - len(line.lstrip()) <= 8:
                current = m.group(1)
                notes[current] = m.group(2)
            elif current and line.strip():
                notes[current] += " " + line.strip()
    # "``name``: what it is;" written in the docstring's prose
    for m in re.finditer(r"``(\w+)``: (.*?)(?:;|\.$|\.\s*\Z)", doc, re.S):
        notes.setdefault(m.group(1), " ".join(m.group(2).split()))
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return notes
    above: list[str] = []
    lines = source.splitlines()
    comments = {
        tok.start[0]: tok.string.lstrip("# ").strip()
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(comments.get(number, ""))
            continue
        m = re.match(r"\s+(\w+)\s*:", line)
        if m and not stripped.startswith(("def ", "@", "return")):
            name = m.group(1)
            said = [*above, comments[number]] if number in comments else above
            if name not in notes and said:
                notes[name] = " ".join(s for s in said if s)
        above = []
    return notes


def _default(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        value: Any = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "(required)"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = [
            f"{g.name}={getattr(value, g.name)!r}"
            for g in dataclasses.fields(value)
            if g.init
            and g.default is not dataclasses.MISSING
            and getattr(value, g.name) != g.default
        ]
        return f"`{type(value).__name__}({', '.join(changed)})`"
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= 1024
        and "bytes" in f.name
    ):
        for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if value % size == 0:
                return f"`{value}` ({value // size} {unit})"
    if isinstance(value, frozenset) and not value:
        return "`frozenset()`"
    return f"`{value!r}`" if not isinstance(value, str) or value else "`''`"


def limits_table(cls: type) -> str:
    """One dataclass's fields as a markdown table: field, default, what it bounds."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    notes = _field_notes(cls)
    rows = ["| field | default | meaning |", "| --- | --- | --- |"]
    for f in dataclasses.fields(cls):
        if f.name.startswith("_") or not f.init:
            continue
        note = notes.get(f.name, "")
        if not note and f.name.endswith("_total"):
            note = "the same cap, for all senders together"
        if not note and dataclasses.is_dataclass(f.default_factory):
            note = f"the `{f.name}` group (its table follows)"
        rows.append(f"| `{f.name}` | {_cell(_default(f))} | {_cell(note)} |")
    return "\n".join(rows)


def _load(module: str, name: str) -> type:
    __import__(module)
    cls: type = getattr(sys.modules[module], name)
    return cls


def render_limits(
    classes: Iterable[tuple[str, str, str]] = LIMIT_CLASSES,
    load: Callable[[str, str], type] = _load,
) -> str:
    """Every settings class of ``classes``: a heading, its summary line and its table."""
    parts = []
    for heading, module, name in classes:
        cls = load(module, name)
        summary = (inspect.getdoc(cls) or "").split("\n\n")[0]
        if summary.startswith("``"):  # the fields' prose itself: they are in the table
            summary = "its fields follow."
        summary = re.sub(r":(?:class|meth|mod|func|attr):`~?([^`]+)`", r"`\1`", summary)
        parts.append(
            f"### `{heading}`\n\n`{module}.{name}`: {' '.join(summary.split())}\n\n"
            f"{limits_table(cls)}\n"
        )
    return "\n".join(parts)


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found += list(action.choices.items())
    return found


def _option_row(action: argparse.Action) -> str | None:
    if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
        return None
    if action.option_strings:
        flags = ", ".join(action.option_strings)
        if action.nargs != 0:
            flags += " " + (
                action.metavar if isinstance(action.metavar, str) else action.dest.upper()
            )
    else:
        flags = action.metavar if isinstance(action.metavar, str) else action.dest
    default = action.default
    shown = (
        ""
        if default in (None, False, argparse.SUPPRESS, [], ()) or action.nargs == 0
        else f"`{default}`"
    )
    text = (action.help or "") % {"default": default, "prog": ""} if action.help else ""
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        text += f" (one of: {', '.join(map(str, action.choices))})"
    return f"| `{_cell(flags)}` | {_cell(shown)} | {_cell(text)} |"


def render_cli(parser: argparse.ArgumentParser | None = None) -> str:
    """Each ``agent-stream`` command: its usage line, description and options."""
    if parser is None:
        from agent_stream.cli import build_parser

        parser = build_parser()
    parts = []
    for name, sub in _subcommands(parser):
        usage = " ".join(sub.format_usage().split())
        usage = usage.removeprefix("usage: ")
        parts.append(f"### `agent-stream {name}`\n")
        if sub.description:
            parts.append(" ".join(sub.description.split()) + "\n")
        parts.append(f"```text\n{usage}\n```\n")
        rows = [r for r in map(_option_row, sub._actions) if r]
        if rows:
            parts.append(
                "| argument | default | meaning |\n| --- | --- | --- |\n" + "\n".join(rows) + "\n"
            )
    return "\n".join(parts)


def render_wires() -> str:
    """The wire registry as a table: name, what it is, accept values, framings, decodable."""
    from agent_stream.adapters.registry import wires

    rows = [
        "| wire | what it is | `accept` values | framings | options | read back |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for w in wires():
        accept = ", ".join(f"`{a}`" for a in dict.fromkeys([w.name, *w.accept]))
        frames = ", ".join(f"`{f}`" for f in w.frames)
        options = ", ".join(f"`{o.name}`" for o in w.options) or "-"
        rows.append(
            f"| `{w.name}` | {_cell(w.summary)} | {accept} | {frames} | {options} | "
            f"{'yes' if w.decoder else 'no'} |"
        )
    return "\n".join(rows)


def render_layers(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The import-linter contracts: each layer and what it may not import."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # mypy's own dependency on Python 3.10
        import tomli as tomllib

    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    rows = ["| contract | modules | may not import |", "| --- | --- | --- |"]
    for c in contracts:
        sources = ", ".join(f"`{m}`" for m in c.get("source_modules", c.get("layers", [])))
        forbidden = ", ".join(f"`{m}`" for m in c.get("forbidden_modules", []))
        rows.append(f"| {_cell(c['name'])} | {sources} | {forbidden or c['type']} |")
    return "\n".join(rows)


RENDERERS: dict[str, Callable[[], str]] = {
    "limits": render_limits,
    "cli": render_cli,
    "wires": render_wires,
    "layers": render_layers,
}
MARKER = re.compile(r"<!-- generated:(\w+) -->")


def expand(markdown: str) -> str:
    """``markdown`` with each ``<!-- generated:NAME -->`` marker replaced by its rendering."""

    def one(m: re.Match[str]) -> str:
        if m.group(1) not in RENDERERS:
            raise KeyError(f"no generated part named {m.group(1)!r}")
        return RENDERERS[m.group(1)]()

    return MARKER.sub(one, markdown)
