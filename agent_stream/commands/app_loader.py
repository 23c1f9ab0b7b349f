"""``serve --app MODULE:ATTR``: find the agent a user built on a framework.

``MODULE:ATTR`` imports a module (``pkg.mod``); ``path/to/file.py:ATTR`` imports a file. The
current directory goes on ``sys.path`` (after the installed packages) so the module, or the
file's own imports of its neighbours, are found. The attribute must be something
:func:`agent_stream.sources.responder_for` knows (a LangGraph compiled graph, a pydantic-ai
Agent, an OpenAI Agents SDK Agent, a callable returning a model stream, or a responder of the
author's own, ``async def respond(request, out)``). Every failure is an :class:`AppLoadError`
with a one-line message naming what was found.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from agent_stream.errors import UsageError

__all__ = ["AppLoadError", "load_app"]


class AppLoadError(UsageError):
    """``--app`` names no usable agent (the message says why, on one line)."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _import_file(path: Path) -> Any:
    if not path.is_file():
        raise AppLoadError(f"--app: no such file {str(path)!r}")
    name = f"agent_stream_app_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AppLoadError(f"--app: {str(path)!r} cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise AppLoadError(f"--app: importing {str(path)!r} failed: {_one_line(exc)}") from None
    return module


def _import_module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise AppLoadError(f"--app: no module named {name!r}") from None
        raise AppLoadError(f"--app: importing {name!r} failed: {_one_line(exc)}") from None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        raise AppLoadError(f"--app: importing {name!r} failed: {_one_line(exc)}") from None


def load_app(spec: str) -> object:
    """The agent ``spec`` (``MODULE:ATTR`` or ``path/to/file.py:ATTR``) names.

    Args:
        spec: where the agent is: a module or a ``.py`` file, a colon, the attribute
            (dotted for an attribute of an attribute).

    Raises:
        AppLoadError: the spec is malformed, the module or file cannot be found or imported,
            the attribute is missing, or it is no kind of agent ``responder_for`` knows.
    """
    where, sep, attr = spec.rpartition(":")
    if not sep or not where or not attr:
        raise AppLoadError(f"--app takes MODULE:ATTR or path/to/file.py:ATTR, got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        # last, so a directory of the project named like an installed package (``agents/``
        # beside the Agents SDK) does not hide it
        sys.path.append(cwd)
    if where.endswith(".py") or os.sep in where or "/" in where:
        module = _import_file(Path(where))
    else:
        module = _import_module(where)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AppLoadError(f"--app: {where!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    from agent_stream.sources.detect import describe, kind_of_app

    if kind_of_app(obj) is None:
        raise AppLoadError(
            f"--app: {where}:{attr} is {describe(obj)}, none of a LangGraph compiled graph, a "
            "pydantic-ai Agent, an OpenAI Agents SDK Agent or a callable returning a model "
            "stream"
        )
    return obj
