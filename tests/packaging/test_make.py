"""The Makefile's guards: an old Python and a stale lock each get one line saying what to do."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UV = ROOT / ".tools" / "bin" / "uv"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def make(target: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "-f", str(ROOT / "Makefile"), target, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def checkout_files(into: Path) -> None:
    """What make's install targets depend on, copied into ``into``."""
    for name in ("pyproject.toml", "uv.lock", "hatch_build.py", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, into / name)
    (into / "agent_stream" / "chunking").mkdir(parents=True)
    shutil.copy(ROOT / "agent_stream" / "__init__.py", into / "agent_stream" / "__init__.py")
    for source in (ROOT / "agent_stream" / "chunking").glob("*.p[yx]*"):
        shutil.copy(source, into / "agent_stream" / "chunking" / source.name)


def test_a_python_older_than_the_minimum_gets_one_line_naming_the_fix(tmp_path: Path) -> None:
    checkout_files(tmp_path)
    old = tmp_path / "python3.9"
    old.write_text(
        '#!/bin/sh\ncase "$*" in *version_info*) exit 1;; *python_version*) echo 3.9.18;; esac\n'
    )
    old.chmod(0o755)
    p = make("demo", tmp_path, f"PYTHON={old}")
    assert p.returncode != 0
    lines = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.startswith("make: agent_stream")]
    assert lines == [
        f"make: agent_stream needs Python >= 3.10; {old} is 3.9.18: run make PYTHON=python3.11 "
        "(or another >= 3.10)"
    ]
    assert not (tmp_path / ".venv").exists() and not (tmp_path / ".tools").exists()


def test_a_missing_python_is_named_too(tmp_path: Path) -> None:
    p = make("python-version", tmp_path, "PYTHON=/nonexistent/python3")
    assert p.returncode != 0
    assert "make: agent_stream needs Python >= 3.10; /nonexistent/python3 is missing" in p.stdout


@pytest.mark.skipif(not UV.exists(), reason="uv is installed by make (.tools/)")
def test_a_lock_that_no_longer_matches_pyproject_names_make_lock(tmp_path: Path) -> None:
    checkout_files(tmp_path)
    (tmp_path / ".tools").symlink_to(ROOT / ".tools")
    assert make("check-lock", tmp_path).returncode == 0, "the committed lock matches"

    pyproject = tmp_path / "pyproject.toml"
    text = pyproject.read_text()
    assert '    "orjson>=3.9",\n' in text
    pyproject.write_text(text.replace('    "orjson>=3.9",\n', '    "orjson>=3.9",\n    "six",\n'))
    p = make("check-lock", tmp_path)
    assert p.returncode != 0
    assert "make: uv.lock does not match pyproject.toml: run 'make lock' and commit uv.lock" in (
        p.stdout
    )
