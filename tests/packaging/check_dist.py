"""`make dist-check`: the sdist and the wheel in dist/ install and run where nothing else is.

The wheel: it carries ``py.typed`` and the compiled chunker for this platform and no tests or
benchmarks; in a clean venv with only the wheel and its dependencies (no pip, Cython, setuptools
or other build tools), ``agent-stream --version`` prints the package's version, the compiled
chunker is the one used and ``agent-stream demo`` runs offline (loopback only).

The sdist: built on a machine without a C compiler (``CC=/bin/false``) it gives a pure-Python
wheel with one warning line, and installs in a clean venv with the interpreted chunker.

The dependencies come from the committed lock (``uv export``), so the check is reproducible.
Usage: ``python tests/packaging/check_dist.py dist`` (uv from ``.tools/`` or PATH).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHUNKER = ("buffer", "sentences", "scanner", "policy", "chunker")
WARNING = "agent_stream: the compiled chunker was not built"
IMPLEMENTATION = "import agent_stream.chunking as c; print(c.IMPLEMENTATION)"


def uv() -> str:
    local = ROOT / ".tools" / "bin" / "uv"
    found = str(local) if local.exists() else shutil.which("uv")
    if found is None:
        sys.exit("check_dist: uv not found (make builds it into .tools/)")
    return found


def run(*argv: str | Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    """Run a command outside the checkout (so ``import agent_stream`` finds the installed
    package, not the source tree); its stdout and stderr together. Exits with both shown when
    it fails."""
    p = subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        cwd=tempfile.gettempdir(),
    )
    out = p.stdout + p.stderr
    if p.returncode != 0:
        sys.exit(f"check_dist: {' '.join(map(str, argv))} failed ({p.returncode}):\n{out}")
    return out


def check(ok: bool, what: str) -> None:
    if not ok:
        sys.exit(f"check_dist: FAILED: {what}")
    print(f"  ok  {what}")


def clean_venv(where: Path) -> Path:
    """A new venv with no pip and no build tools; its python."""
    run(uv(), "venv", "-q", "--python", sys.executable, where, env={"UV_PYTHON_DOWNLOADS": "never"})
    return where / "bin" / "python"


def install(
    python: Path, target: Path, constraints: Path, env: dict[str, str] | None = None
) -> str:
    return run(
        uv(),
        "pip",
        "install",
        "--python",
        python,
        "-c",
        constraints,
        "--refresh-package",
        "agent-stream",
        target.resolve(),
        env=env,
    )


def check_wheel(wheel: Path, version: str, constraints: Path, tmp: Path) -> None:
    print(f"wheel {wheel.name}")
    names = zipfile.ZipFile(wheel).namelist()
    check("agent_stream/py.typed" in names, "carries py.typed")
    suffix = "-linux" if sys.platform.startswith("linux") else ""
    for mod in CHUNKER:
        check(
            any(
                re.fullmatch(rf"agent_stream/chunking/_compiled/{mod}\..*{suffix}.*\.so", n)
                for n in names
            ),
            f"carries the compiled {mod} module for this platform",
        )
    check(not wheel.name.endswith("-none-any.whl"), "is tagged for this platform")
    check(
        not any(n.split("/")[0] in ("tests", "bench", "conformance", "docs") for n in names),
        "carries no tests, benchmarks, conformance or docs",
    )
    python = clean_venv(tmp / "wheel-venv")
    install(python, wheel, constraints)
    bin_ = python.parent
    for tool in ("pip", "Cython", "setuptools", "hatchling"):
        missing = subprocess.run([python, "-c", f"import {tool}"], capture_output=True).returncode
        check(missing != 0, f"the venv has no {tool}")
    out = run(bin_ / "agent-stream", "--version").strip()
    check(out == f"agent-stream {version}", f"agent-stream --version prints {out!r}")
    check(run(python, "-c", IMPLEMENTATION).strip() == "compiled", "uses the compiled chunker")
    with tempfile.TemporaryDirectory() as cwd:
        p = subprocess.run(
            [bin_ / "agent-stream", "demo", "--rate", "0"],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=cwd,
            env={**os.environ, "NO_COLOR": "1"},
        )
    tail = (p.stdout + p.stderr).strip().splitlines()[-1:] or [""]
    check(p.returncode == 0 and "completed" in tail[0], f"agent-stream demo runs: {tail[0]!r}")


def check_sdist(sdist: Path, version: str, constraints: Path, tmp: Path) -> None:
    print(f"sdist {sdist.name}")
    no_cc = {"CC": "/bin/false", "CXX": "/bin/false"}
    out = run(uv(), "build", "--wheel", "--out-dir", tmp / "from-sdist", sdist.resolve(), env=no_cc)
    warnings = [line for line in out.splitlines() if WARNING in line]
    check(len(warnings) == 1, f"without a C compiler it warns in one line: {warnings[:1]}")
    built = list((tmp / "from-sdist").glob("*.whl"))
    check(
        len(built) == 1 and built[0].name.endswith("-py3-none-any.whl"),
        f"and builds a pure-Python wheel: {[w.name for w in built]}",
    )
    python = clean_venv(tmp / "sdist-venv")
    install(python, sdist, constraints, env=no_cc)
    out = run(python.parent / "agent-stream", "--version").strip()
    check(out == f"agent-stream {version}", f"installed from the sdist: {out!r}")
    check(run(python, "-c", IMPLEMENTATION).strip() == "python", "uses the interpreted chunker")


def main() -> None:
    dist = Path(sys.argv[1] if len(sys.argv) > 1 else "dist").resolve()
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        sys.exit(f"check_dist: expected one wheel and one sdist in {dist} (make dist)")
    version = wheels[0].name.split("-")[1]
    with tempfile.TemporaryDirectory(prefix="agent_stream_dist_") as t:
        tmp = Path(t)
        constraints = tmp / "constraints.txt"
        run(
            uv(),
            "export",
            "--project",
            ROOT,
            "--frozen",
            "--all-extras",
            "--no-default-groups",
            "--no-emit-project",
            "--no-hashes",
            "-q",
            "-o",
            constraints,
        )
        check_wheel(wheels[0], version, constraints, tmp)
        check_sdist(sdists[0], version, constraints, tmp)
    print("check_dist: the sdist and the wheel install and run")


if __name__ == "__main__":
    main()
