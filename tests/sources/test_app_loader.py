"""``--app`` loading: module or file, attribute, kind; every failure one line naming it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_stream.commands.app_loader import AppLoadError, load_app
from agent_stream.sources import responder_for

GRAPH = """
from langgraph.graph import START, MessagesState, StateGraph
from langchain_core.messages import AIMessage

def answer(state):
    return {"messages": [AIMessage(content="hi")]}

g = StateGraph(MessagesState)
g.add_node("answer", answer)
g.add_edge(START, "answer")
graph = g.compile()
not_an_agent = "a string"

class Holder:
    pass

async def stream(request):
    yield {"type": "message_start", "message": {"model": "m"}}
"""


@pytest.fixture
def app_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("langgraph")
    (tmp_path / "myapp.py").write_text(GRAPH, encoding="utf-8")
    (tmp_path / "broken.py").write_text("import nowhere_to_be_found\n", encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "agent_file.py").write_text(
        "from myapp import graph as g2\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in ("myapp", "broken"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path


def test_module_and_file_specs_load_the_graph(app_dir: Path) -> None:
    graph = load_app("myapp:graph")
    assert type(graph).__name__ == "CompiledStateGraph"
    assert callable(responder_for(graph))
    # a file whose imports reach its neighbours through the current directory
    assert load_app("pkg/agent_file.py:g2") is graph
    assert callable(load_app("myapp:stream"))


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("myapp", "MODULE:ATTR"),
        ("myapp:", "MODULE:ATTR"),
        ("nosuchmodule:graph", "no module named 'nosuchmodule'"),
        ("broken:x", "importing 'broken' failed: ModuleNotFoundError"),
        ("missing.py:graph", "no such file"),
        ("myapp:nothing", "has no attribute 'nothing'"),
        ("myapp:not_an_agent", "is a str ('a string')"),
        ("myapp:Holder", "is the class"),
    ],
)
def test_bad_specs_are_one_line_errors(app_dir: Path, spec: str, says: str) -> None:
    with pytest.raises(AppLoadError) as info:
        load_app(spec)
    msg = str(info.value)
    assert says in msg and "\n" not in msg
