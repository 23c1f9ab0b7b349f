"""Hatchling build hook: compiles the chunker's own modules with Cython (pure-Python mode).

``agent_stream/chunking/{buffer,sentences,scanner,policy,chunker}.py`` are compiled as they are,
with the types their ``.pxd`` files beside them declare, into ``agent_stream.chunking._compiled``:
the sources are copied into a temporary tree under that package, ``Cython.Build.cythonize`` turns
them into C there and setuptools' ``build_ext`` compiles them. The relative imports between the
modules find their compiled siblings, and the interpreted modules stay importable under their own
names (``AGENT_STREAM_PURE_PYTHON=1`` picks them; the tests run both).

On ``pip install -e .`` the extension modules are put in ``agent_stream/chunking/_compiled/``
(each replaced atomically: a running process may have the old one mapped); on a wheel build they
go into the wheel, tagged for this interpreter and platform. Generated C stays in the temporary
tree.

Optional: without Cython or a C compiler, when the compile fails, or with
``AGENT_STREAM_NO_COMPILE=1``, it prints one warning line and the build finishes with the
interpreted modules only (an editable install then also removes compiled modules left from an
earlier build, so none older than its source is imported).

``python hatch_build.py`` (with Cython importable) rebuilds them in place.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

PACKAGE = Path("agent_stream", "chunking")
TARGET = PACKAGE / "_compiled"
MODULES = ("buffer", "sentences", "scanner", "policy", "chunker")
WARNING = "agent_stream: the compiled chunker was not built ({}); the interpreted one is used"
# annotation_typing off: the types are the .pxd's (the annotations are for mypy).
DIRECTIVES = {"language_level": 3, "annotation_typing": False}


class BuildFailed(Exception):
    """The compiled modules could not be built; the message says why, in a few words."""


@contextlib.contextmanager
def _output_to(log: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (the compiler's too) to ``log``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with log.open("ab") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _first_error(log: Path, fallback: str) -> str:
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()]
    return (errors or [fallback])[0][:200]


def compile_modules(root: Path, out_dir: Path, work: Path) -> list[Path]:
    """Compile the chunker's modules under ``root`` into ``out_dir/agent_stream/chunking/
    _compiled``; return the extension modules' paths. Raises ``BuildFailed``."""
    try:
        from Cython.Build import cythonize
        from setuptools import Distribution, Extension
        from setuptools.command.build_ext import build_ext
    except ImportError as e:
        raise BuildFailed(f"{e.name} is not installed") from None
    pkg = work / "src" / TARGET
    pkg.mkdir(parents=True)
    for d in (pkg.parent.parent, pkg.parent, pkg):
        (d / "__init__.py").touch()
    for name in MODULES:
        for ext in (".py", ".pxd"):
            shutil.copyfile(root / PACKAGE / f"{name}{ext}", pkg / f"{name}{ext}")
    dotted = ".".join(TARGET.parts)
    # -g0: without debugging information the modules are a fifth of the size (POSIX compilers).
    extensions = [
        Extension(f"{dotted}.{name}", [str(pkg / f"{name}.py")], extra_compile_args=["-g0"])
        for name in MODULES
    ]
    log = work / "build.log"
    cwd = os.getcwd()
    try:
        os.chdir(work / "src")  # cythonize names the modules from the paths below here
        with _output_to(log):
            cmd = build_ext(
                Distribution(
                    {
                        "ext_modules": cythonize(
                            extensions, compiler_directives=DIRECTIVES, quiet=True
                        )
                    }
                )
            )
            cmd.build_lib = str(out_dir)
            cmd.build_temp = str(work / "temp")
            cmd.parallel = os.cpu_count() or 1
            cmd.ensure_finalized()
            cmd.run()
    except (Exception, SystemExit) as e:  # Cython's and the compiler's errors, of many kinds
        why = f"{type(e).__name__}: {e}"
        if type(e).__name__ == "CompileError":  # its text is the whole command line
            why = f"the C compiler ({os.environ.get('CC') or 'cc'}) failed"
        raise BuildFailed(_first_error(log, why)) from None
    finally:
        os.chdir(cwd)
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    return [out_dir / TARGET / f"{name}{suffix}" for name in MODULES]


def built_in_place(root: Path) -> list[Path]:
    """Compiled modules of an editable install (in the source tree)."""
    return sorted((root / TARGET).glob("*" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")))


def build_in_place(root: Path) -> list[Path]:
    """Build the compiled modules into the source tree (editable installs, ``make speedups``).
    On failure the old ones are removed: none older than its source is imported."""
    with tempfile.TemporaryDirectory(prefix="agent_stream_chunker_") as tmp:
        try:
            built = compile_modules(root, Path(tmp, "out"), Path(tmp))
        except BuildFailed:
            for old in built_in_place(root):
                old.unlink()
            raise
        placed = []
        for path in built:
            dest = root / TARGET / path.name
            shutil.copyfile(path, dest.with_name(f".{path.name}.tmp"))
            os.replace(dest.with_name(f".{path.name}.tmp"), dest)
            placed.append(dest)
    return placed


def _skip_requested() -> bool:
    return os.environ.get("AGENT_STREAM_NO_COMPILE", "") not in ("", "0")


if TYPE_CHECKING:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
else:
    try:
        from hatchling.builders.hooks.plugin.interface import BuildHookInterface
    except ImportError:  # run as a script, outside a build: only the functions above are used
        BuildHookInterface = object


class CompiledChunkerHook(BuildHookInterface):  # type: ignore[misc,type-arg,unused-ignore]
    PLUGIN_NAME = "custom"

    _work_dir: str | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        editable = version == "editable"
        try:
            if _skip_requested():
                raise BuildFailed("AGENT_STREAM_NO_COMPILE is set")
            if editable:
                built = build_in_place(root)
            else:
                self._work_dir = tempfile.mkdtemp(prefix="agent_stream_chunker_")
                out = Path(self._work_dir, "out")
                built = compile_modules(root, out, Path(self._work_dir))
                for path in built:
                    build_data["force_include"][str(path)] = path.relative_to(out).as_posix()
                build_data["pure_python"] = False
                build_data["infer_tag"] = True
        except BuildFailed as e:
            if editable:
                for old in built_in_place(root):
                    old.unlink()
            self.app.display_warning(WARNING.format(e))
            return
        self.app.display_info(f"agent_stream: compiled the chunker ({len(built)} modules)")

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._work_dir is not None:
            shutil.rmtree(self._work_dir, ignore_errors=True)
            self._work_dir = None


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    try:
        paths = build_in_place(here)
    except BuildFailed as e:
        print(WARNING.format(e), file=sys.stderr)
        sys.exit(1)
    print("agent_stream: built " + ", ".join(str(p.relative_to(here)) for p in paths))
