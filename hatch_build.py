"""Hatchling build hook: the optional compiled chunker, ``agent_stream.chunking._speedups``.

On ``pip install -e .`` it cythonizes ``agent_stream/chunking/_speedups.pyx`` and compiles it
next to the .pyx (``_speedups<EXT_SUFFIX>``); on a wheel build it compiles it into a temporary
directory, puts it in the wheel and tags the wheel for this interpreter and platform.

Optional, like markupsafe's and msgpack's speedups: when Cython or the C compiler is missing, the
compile fails, or ``AGENT_STREAM_NO_COMPILE=1`` is set, it prints one warning line and the build
finishes without it (``agent_stream.chunking`` then uses the pure-Python ``TextChunker``).

The compiler is the one this Python was built with (sysconfig's ``CC``, ``LDSHARED``,
``CCSHARED``, include directory and ``EXT_SUFFIX``); like distutils, ``$CC``, ``$LDSHARED``,
``$CFLAGS`` and ``$LDFLAGS`` override or extend them. No setuptools is involved.

``python hatch_build.py`` (with Cython importable) rebuilds the extension in place.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

MODULE = "agent_stream.chunking._speedups"
SOURCE = Path("agent_stream", "chunking", "_speedups.pyx")
WARNING = "agent_stream: building the compiled chunker failed ({}); using the pure-Python one"


class BuildFailed(Exception):
    """The extension could not be built; the message says why, in a few words."""


def ext_suffix() -> str:
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not suffix:
        raise BuildFailed("this Python reports no EXT_SUFFIX")
    return str(suffix)


def _run(cmd: list[str], what: str, log: Callable[[str], None]) -> None:
    log("$ " + shlex.join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise BuildFailed(f"{what} {cmd[0]!r} not found") from None
    except OSError as e:
        raise BuildFailed(f"{what} {cmd[0]!r} could not run: {e}") from None
    output = (proc.stdout + proc.stderr).strip()
    if output:
        log(output)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
        errors = [ln for ln in lines if "error" in ln.lower()]
        detail = (errors or lines or [""])[0][:200]
        raise BuildFailed(
            f"{what} {cmd[0]!r} exited with status {proc.returncode}"
            + (f": {detail}" if detail else "")
        )


def _compiler() -> tuple[list[str], list[str]]:
    """The C compiler and the shared-library linker, as distutils would pick them."""
    default_cc = sysconfig.get_config_var("CC") or ""
    default_ld = sysconfig.get_config_var("LDSHARED") or ""
    cc = os.environ.get("CC") or default_cc
    ld = os.environ.get("LDSHARED") or default_ld
    if "CC" in os.environ and "LDSHARED" not in os.environ and ld.startswith(default_cc):
        ld = cc + ld[len(default_cc) :]  # $CC links too, as in distutils' customize_compiler
    if not cc.strip() or not ld.strip():
        raise BuildFailed("no C compiler configured for this Python (sysconfig has no CC)")
    return shlex.split(cc), shlex.split(ld)


def compile_extension(
    root: Path, out_dir: Path, work_dir: Path, log: Callable[[str], None] = lambda _: None
) -> Path:
    """Cythonize and compile the .pyx under ``root``; return the path of the built module
    (``out_dir/_speedups<EXT_SUFFIX>``, replaced atomically). Raises ``BuildFailed``."""
    source = root / SOURCE
    if not source.is_file():
        raise BuildFailed(f"{SOURCE} is missing")
    try:
        import Cython  # noqa: F401  (only to tell "not installed" apart from a failed compile)
    except ImportError:
        raise BuildFailed("Cython is not installed") from None
    suffix = ext_suffix()
    cc, ld = _compiler()

    c_file = work_dir / "_speedups.c"
    o_file = work_dir / "_speedups.o"
    # The child Python must see the Cython this process imported (pip's build environment).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    cythonize = [sys.executable, "-m", "cython", "-3", "--module-name", MODULE,
                 "-o", str(c_file), str(source)]
    log("$ " + shlex.join(cythonize))
    proc = subprocess.run(cythonize, capture_output=True, text=True, env=env, check=False)
    output = (proc.stdout + proc.stderr).strip()
    if output:
        log(output)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
        # the first "path.pyx:line:col: message" line, else the last line
        located = [ln for ln in lines if re.search(r"\.pyx:\d+:\d+: ", ln)]
        detail = located[0] if located else lines[-1] if lines else f"status {proc.returncode}"
        raise BuildFailed(f"Cython failed: {detail[:200]}")

    includes = {sysconfig.get_paths()["include"], sysconfig.get_paths()["platinclude"]}
    cflags = ["-O2", "-fwrapv", "-DNDEBUG"]
    cflags += shlex.split(sysconfig.get_config_var("CCSHARED") or "")
    cflags += [f"-I{d}" for d in sorted(includes)]
    cflags += shlex.split(os.environ.get("CFLAGS", ""))
    _run([*cc, *cflags, "-c", str(c_file), "-o", str(o_file)], "C compiler", log)

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"_speedups{suffix}"
    partial = work_dir / target.name
    _run([*ld, str(o_file), "-o", str(partial), *shlex.split(os.environ.get("LDFLAGS", ""))],
         "linker", log)
    # Replace, never overwrite in place: a running process may have the old one mapped.
    tmp = out_dir / f".{target.name}.tmp"
    shutil.copyfile(partial, tmp)
    os.replace(tmp, target)
    return target


def build_in_place(root: Path, log: Callable[[str], None] = lambda _: None) -> Path:
    """Build the extension next to its .pyx (editable installs, ``make speedups``). On failure
    the old one is removed, so the package does not import a module older than its .pyx."""
    target = root / SOURCE.parent / f"_speedups{ext_suffix()}"
    try:
        with tempfile.TemporaryDirectory(prefix="agent_stream_speedups_") as work:
            return compile_extension(root, root / SOURCE.parent, Path(work), log)
    except BuildFailed:
        target.unlink(missing_ok=True)
        raise


def _skip_requested() -> bool:
    return os.environ.get("AGENT_STREAM_NO_COMPILE", "") not in ("", "0")


if TYPE_CHECKING:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
else:
    try:
        from hatchling.builders.hooks.plugin.interface import BuildHookInterface
    except ImportError:  # run as a script, outside a build: only the functions above are used
        BuildHookInterface = object


class SpeedupsBuildHook(BuildHookInterface):  # type: ignore[misc,type-arg,unused-ignore]
    PLUGIN_NAME = "custom"

    _work_dir: str | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        editable = version == "editable"
        if _skip_requested():
            if editable:  # a module left from an earlier build would be imported instead
                (root / SOURCE.parent / f"_speedups{ext_suffix()}").unlink(missing_ok=True)
            self.app.display_warning(
                "agent_stream: AGENT_STREAM_NO_COMPILE is set, not building the compiled "
                "chunker; using the pure-Python one"
            )
            return
        log = self.app.display_debug
        try:
            if editable:
                built = build_in_place(root, log)
            else:
                self._work_dir = tempfile.mkdtemp(prefix="agent_stream_speedups_")
                built = compile_extension(root, Path(self._work_dir, "out"),
                                          Path(self._work_dir), log)
                dest = (SOURCE.parent / built.name).as_posix()
                build_data["force_include"][str(built)] = dest
                build_data["pure_python"] = False
                build_data["infer_tag"] = True
        except BuildFailed as e:
            self.app.display_warning(WARNING.format(e))
            return
        self.app.display_info(f"agent_stream: built the compiled chunker {built.name}")

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._work_dir is not None:
            shutil.rmtree(self._work_dir, ignore_errors=True)
            self._work_dir = None


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    try:
        path = build_in_place(here, print if "-v" in sys.argv[1:] else lambda _: None)
    except BuildFailed as e:
        print(WARNING.format(e), file=sys.stderr)
        sys.exit(1)
    print(f"agent_stream: built {path.relative_to(here)}")
