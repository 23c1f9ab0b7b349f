"""No import cycles in agent_stream, counting every import (those inside functions too); only
imports under ``if TYPE_CHECKING:`` are exempt. The layer contracts are ``[tool.importlinter]``
in pyproject.toml, checked by ``lint-imports`` (``make lint``); the forbidden ones are read
from there and checked here again on the graph with function-level imports. And no test file
imports another: what tests share lives in fixtures or helper modules."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    adj = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in adj:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            if i < len(adj[v]):
                work.append((v, i + 1))
                w = adj[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                scc = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    scc.append(w)
                    if w == v:
                        break
                if len(scc) > 1:
                    found.append(sorted(scc))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return found


def _describe(graph: grimp.ImportGraph, scc: list[str]) -> str:
    members = set(scc)
    lines = []
    for a in scc:
        for b in sorted(graph.find_modules_directly_imported_by(a) & members):
            where = [d["line_number"] for d in graph.get_import_details(importer=a, imported=b)]
            lines.append(f"  {a} -> {b} (line {', '.join(map(str, where))})")
    return "\n".join(lines)


def _graph() -> grimp.ImportGraph:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return grimp.build_graph(
        "agent_stream",
        include_external_packages=False,
        exclude_type_checking_imports=True,
        cache_dir=None,
    )


def test_the_cycle_finder_finds_a_cycle_and_only_cycles() -> None:
    g = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c", "p.d"):
        g.add_module(m)
    g.add_import(importer="p.a", imported="p.b", line_number=1, line_contents="import p.b")
    g.add_import(importer="p.b", imported="p.c", line_number=1, line_contents="import p.c")
    g.add_import(importer="p.c", imported="p.a", line_number=9, line_contents="import p.a")
    g.add_import(importer="p.d", imported="p.a", line_number=1, line_contents="import p.a")
    assert _cycles(g) == [["p.a", "p.b", "p.c"]]
    assert "p.c -> p.a (line 9)" in _describe(g, ["p.a", "p.b", "p.c"])


def test_a_function_level_import_counts() -> None:
    graph = _graph()
    # commands.demo imports agent_stream.uagents only inside its functions: still an edge
    assert "agent_stream.uagents" in graph.find_modules_directly_imported_by(
        "agent_stream.commands.demo"
    )


def test_no_import_cycles_in_the_package() -> None:
    graph = _graph()
    cycles = _cycles(graph)
    if cycles:
        pytest.fail(
            "import cycles (imports inside functions count; only `if TYPE_CHECKING:` "
            "imports are exempt):\n" + "\n".join(_describe(graph, c) for c in cycles)
        )


def _contracts() -> dict[str, dict[str, object]]:
    """The ``forbidden`` contracts of ``[tool.importlinter]`` in pyproject.toml, by id."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with (ROOT / "pyproject.toml").open("rb") as f:
        config = tomllib.load(f)["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"] if c["type"] == "forbidden"}


@pytest.mark.parametrize("contract", ["core", "root", "adapters", "sources", "uagents", "rooms"])
def test_the_forbidden_contracts_hold_with_imports_inside_functions_too(contract: str) -> None:
    """Each forbidden contract of ``[tool.importlinter]`` (the one statement of the layers),
    checked on the graph that counts imports inside functions: what a source module reaches at
    any depth includes none of the forbidden modules of this package."""
    c = _contracts()[contract]
    graph = _graph()
    forbidden = tuple(
        m.removesuffix(".**")
        for m in c["forbidden_modules"]  # type: ignore[attr-defined]
        if m.startswith("agent_stream")
    )
    assert forbidden, contract
    sources = list(c["source_modules"])  # type: ignore[call-overload]
    if c.get("as_packages", True):  # a package stands for its modules too
        sources = sorted(
            m for m in graph.modules if any(m == s or m.startswith(s + ".") for s in sources)
        )
    assert sources, contract
    for module in sources:
        reached = graph.find_upstream_modules(module)  # what it imports, at any depth
        bad = sorted(m for m in reached if m.startswith(forbidden))
        assert not bad, f"{contract}: {module} reaches {bad}"


def test_no_test_file_imports_another() -> None:
    """Helpers shared by test files live in conftest.py fixtures or in a helper module named for
    what it holds (tests/*_fixtures.py, tests/integration/haproxy.py, ...), never in a test file
    that others import; code run in a child process counts too."""
    imports = re.compile(r"^\s*(?:from\s+test_\w+\s+import|import\s+test_\w+)", re.MULTILINE)
    found = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group().strip()}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for text in [path.read_text(encoding="utf-8")]
        for m in imports.finditer(text)
    ]
    assert not found, "\n".join(found)
