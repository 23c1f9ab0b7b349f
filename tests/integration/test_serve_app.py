"""`agent-stream serve --app`: an agent built on a framework, served as a streaming agent and
asked over real signed envelopes; every way of naming a wrong app is one line and exit 2."""

from __future__ import annotations

import json

import pytest
from agents_harness import ROOT, Harness

pytestmark = pytest.mark.integration


def test_a_langgraph_graph_is_served_and_streams_its_tool_call_and_answer(harness: Harness) -> None:
    example = str(ROOT / "examples" / "langgraph_agent.py") + ":graph"
    server, _address, _endpoint = harness.serve("--app", example, "--name", "graph-app")
    try:
        asked = harness.cli("ask", "graph-app", "--json", "--timeout", "60", "Weather in Paris?")
        code, out, err = asked.finish(90)
        assert code == 0, err
        transcript = json.loads(out)
        assert transcript["status"] == "completed"
        types = [m["type"] for m in transcript["messages"]]
        assert "tool_call" in types and "tool_result" in types and "text" in types
        assert types.index("tool_call") < len(types) - 1 - types[::-1].index("text")
    finally:
        server.stop()


EXAMPLE = str(ROOT / "examples" / "langgraph_agent.py")


@pytest.mark.parametrize(
    ("spec", "extra", "said"),
    [
        (EXAMPLE + ":graph", ["--model", "openai"], "cannot be given with --model"),
        ("no/such/file.py:graph", [], "no such file"),
        (EXAMPLE + ":nothing_here", [], "has no attribute"),
        (EXAMPLE + ":os", [], "module"),  # a module, not an agent: named
        ("no_such_module_anywhere:app", [], "no_such_module_anywhere"),
        ("no_colon_here", [], "MODULE:ATTR"),
    ],
)
def test_a_wrong_app_is_one_line_and_exit_2(
    harness: Harness, spec: str, extra: list[str], said: str
) -> None:
    proc = harness.cli("serve", "--app", spec, "--no-directory", *extra)
    code, out, err = proc.finish(60)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert said in lines[0]


RESPONDER_APP = """
async def respond(request, out):
    async with out.block("llm", label="Menu") as b:
        await b.text("Pick a snack.")
        await b.card("carousel", {
            "title": "Snacks",
            "items": [{"id": "a", "title": "Apple",
                       "primary_cta": {"label": "Order", "selection": {"id": "a"}}}],
        })
"""


def test_a_responder_of_ones_own_is_served_with_its_card(harness: Harness) -> None:
    app = harness.workdir / "menu_app.py"
    app.write_text(RESPONDER_APP)
    server, _address, _endpoint = harness.serve("--app", f"{app}:respond", "--name", "menu")
    try:
        code, out, err = harness.cli("ask", "menu", "--json", "--timeout", "60", "Hungry").finish(
            90
        )
        assert code == 0, err
        transcript = json.loads(out)
        [card] = [m for m in transcript["messages"] if m["type"] == "card"]
        assert card["props"]["kind"] == "carousel"
        assert card["props"]["payload"]["items"][0]["title"] == "Apple"
        code, out, err = harness.cli("ask", "menu", "--timeout", "60", "Hungry").finish(90)
        assert code == 0, err
        assert "▣ Snacks" in out and "[1] Apple: Order" in out
    finally:
        server.stop()
