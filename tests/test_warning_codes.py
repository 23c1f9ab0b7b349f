"""Every warning code the package emits is in the catalogue (errors.WarningCode, errors.CODES)."""

from __future__ import annotations

import re
from pathlib import Path

from agent_stream.errors import CODES, WarningCode

PACKAGE = Path(__file__).resolve().parent.parent / "agent_stream"


def test_each_constant_is_documented_once() -> None:
    consts = {k: v for k, v in vars(WarningCode).items() if k.isupper()}
    assert len(set(consts.values())) == len(consts)
    assert set(consts.values()) == set(CODES)
    assert all(CODES[c].strip() for c in CODES)


def test_every_code_used_in_the_package_is_in_the_catalogue() -> None:
    literal = re.compile(r'(?:StreamWarning|_warn)\(\s*"([a-z_]+)"')
    named = re.compile(r"WarningCode\.([A-Z_]+)")
    used: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        src = path.read_text(encoding="utf-8")
        used.update(literal.findall(src))
        used.update(getattr(WarningCode, n) for n in named.findall(src))
    assert used, "the scan found no warning codes at all"
    assert used <= set(CODES), f"undocumented warning codes: {sorted(used - set(CODES))}"
