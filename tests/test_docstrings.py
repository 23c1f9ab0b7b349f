"""Docstrings in one style, Google with ``Args:``, which the API reference renders.

For each package of ``PACKAGES``, every public function, method and class of every public module
documents each of its parameters in its ``Args:`` section (a class documents its ``__init__``'s,
as ``merge_init_into_class`` shows them on the class), names no parameter its signature lacks,
and parses without a griffe warning (``mkdocs build --strict`` would fail on one). A dataclass may
document its fields in ``Attributes:`` or with a comment on or above the field instead, as
``docs/generated.py`` reads them for the limits tables.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

griffe: Any = pytest.importorskip("griffe", reason="griffe comes with the docs tools")

ROOT = Path(__file__).resolve().parent.parent

# "agent_stream" is its top-level modules only; every other entry includes its subpackages
PACKAGES: list[str] = [
    # one line per package, added once its docstrings pass
    "agent_stream",
    "agent_stream.adapters",
    "agent_stream.chunking",
    "agent_stream.commands",
    "agent_stream.telemetry",
    "agent_stream.sources",
    "agent_stream.uagents",
    "agent_stream.gateway",
]

# parameters nobody documents: the receiver, and pass-through *args / **kwargs
_IMPLICIT = {"self", "cls"}


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _modules(package: Any, *, recurse: bool) -> Iterator[Any]:
    yield package
    for member in package.members.values():
        if member.is_alias or not member.is_module or member.name.startswith("_"):
            continue
        if member.is_init_module or member.is_namespace_subpackage:
            if recurse:
                yield from _modules(member, recurse=True)
        else:
            yield member


def _signature_names(function: Any) -> tuple[set[str], set[str]]:
    """The parameters to document, and every name the signature allows documenting."""
    required: set[str] = set()
    allowed: set[str] = set()
    for parameter in function.parameters:
        name = parameter.name
        kind = parameter.kind.value
        if kind in ("variadic positional", "variadic keyword"):
            star = "*" if kind == "variadic positional" else "**"
            allowed |= {name, star + name}
            continue
        if name in _IMPLICIT:
            continue
        required.add(name)
        allowed.add(name)
    return required, allowed


def _documented(docstring: Any, kinds: tuple[str, ...] = ("parameters",)) -> set[str]:
    if docstring is None:
        return set()
    names: set[str] = set()
    for section in docstring.parsed:
        if section.kind.value in kinds:
            names |= {item.name for item in section.value}
    return names


def _commented(cls: Any, name: str) -> bool:
    """Whether the field ``name`` of dataclass ``cls`` has a comment on or just above its line."""
    attribute = cls.members.get(name)
    if attribute is None or attribute.is_alias or attribute.lineno is None:
        return False
    lines = attribute.module.lines
    index = attribute.lineno - 1
    if "#" in lines[index]:
        return True
    return bool(index > 0 and lines[index - 1].strip().startswith("#"))


def _check_function(function: Any, where: str, problems: list[str]) -> None:
    required, allowed = _signature_names(function)
    documented = _documented(function.docstring)
    for name in sorted(required - documented):
        problems.append(f"{where}: parameter {name!r} is not in Args:")
    for name in sorted(documented - allowed):
        problems.append(f"{where}: Args: names {name!r}, which the signature lacks")


def _check_class(cls: Any, where: str, problems: list[str]) -> None:
    init = cls.members.get("__init__")
    if init is not None and not init.is_alias:
        required, allowed = _signature_names(init)
        documented = _documented(cls.docstring) | _documented(init.docstring)
        if "dataclass" in cls.labels:
            fields = _documented(cls.docstring, ("attributes",))
            for name in list(required - documented):
                member = cls.members.get(name)
                has_docstring = member is not None and not member.is_alias and member.docstring
                if name in fields or has_docstring or _commented(cls, name):
                    documented.add(name)
            extra = fields - set(cls.members) - allowed
            for name in sorted(extra):
                problems.append(f"{where}: Attributes: names {name!r}, which the class lacks")
        for name in sorted(required - documented):
            problems.append(f"{where}: parameter {name!r} is not in Args:")
        for name in sorted(documented - allowed):
            problems.append(f"{where}: Args: names {name!r}, which the signature lacks")
    else:
        for name in sorted(_documented(cls.docstring)):
            problems.append(f"{where}: Args: names {name!r}, but the class takes no arguments")
    _check_members(cls, where, problems)


def _check_members(owner: Any, where: str, problems: list[str]) -> None:
    for name, member in owner.members.items():
        if member.is_alias or name.startswith("_"):
            continue
        here = f"{where}.{name}"
        if member.is_class:
            _check_class(member, here, problems)
        elif member.is_function and "property" not in member.labels:
            _check_function(member, here, problems)


@functools.lru_cache(maxsize=4)
def _load(top: str, root: Path) -> Any:
    """The top-level package ``top`` under ``root``, as griffe reads it with every subpackage:
    read once for all of ``PACKAGES`` (each docstring is parsed when first checked)."""
    return griffe.load(top, docstring_parser="google", search_paths=[str(root)])


def docstring_problems(package: str, root: Path = ROOT) -> list[str]:
    """What in ``package``'s public docstrings (found under ``root``) breaks the rules above."""
    top, _, rest = package.partition(".")
    loaded = _load(top, root)
    if rest:
        loaded = loaded[rest]
    problems: list[str] = []
    handler = _Warnings()
    logger = logging.getLogger("griffe")
    logger.addHandler(handler)
    try:
        for module in _modules(loaded, recurse=package != "agent_stream"):
            _check_members(module, module.path, problems)
    finally:
        logger.removeHandler(handler)
    problems.extend(f"griffe: {message}" for message in handler.messages)
    return problems


@pytest.mark.parametrize("package", PACKAGES)
def test_public_docstrings_document_every_parameter(package: str) -> None:
    problems = docstring_problems(package)
    assert not problems, f"{len(problems)} docstring problems:\n" + "\n".join(problems)


def test_the_check_sees_a_missing_a_wrong_and_a_malformed_parameter(tmp_path: Path) -> None:
    package = tmp_path / "docpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text(
        '''
from dataclasses import dataclass


def good(a: int, *args: int, b: str = "", **kwargs: int) -> None:
    """Fine.

    Args:
        a: the first.
        *args: more.
        b: the second.
        **kwargs: the rest.
    """


def missing(a: int, b: int) -> None:
    """Documents only ``a``.

    Args:
        a: the first.
    """


def wrong(a: int) -> None:
    """Documents a parameter it does not take.

    Args:
        a: the first.
        c: not there.
    """


class Thing:
    """A thing.

    Args:
        size: how big.
    """

    def __init__(self, size: int, colour: str) -> None:
        self.size = size

    def paint(self, colour: str) -> None:
        """Prose only, no Args."""


@dataclass
class Limits:
    """Limits.

    Attributes:
        first: documented here.
    """

    first: int = 1
    second: int = 2  # documented by its comment
    # documented by the comment above
    third: int = 3
    fourth: int = 4


def malformed(a: int) -> None:
    """Its Args: line lacks the colon.

    Args:
        a the first.
    """


def _private(a: int) -> None:
    """Not checked."""
'''
    )
    problems = docstring_problems("docpkg", tmp_path)
    warned = [p for p in problems if p.startswith("griffe: ")]
    assert any("'c' does not appear in the function signature" in w for w in warned), warned
    assert any("Failed to get 'name: description' pair" in w for w in warned), warned
    problems = [p for p in problems if not p.startswith("griffe: ")]
    assert problems == [
        "docpkg.mod.missing: parameter 'b' is not in Args:",
        "docpkg.mod.wrong: Args: names 'c', which the signature lacks",
        "docpkg.mod.Thing: parameter 'colour' is not in Args:",
        "docpkg.mod.Thing.paint: parameter 'colour' is not in Args:",
        "docpkg.mod.Limits: parameter 'fourth' is not in Args:",
        "docpkg.mod.malformed: parameter 'a' is not in Args:",
    ], problems
