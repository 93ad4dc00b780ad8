"""End to end: one sweep of three agents x two models, each model behind its own stand-in endpoint.

Model `model-a` is served by a stand-in speaking Anthropic messages and OpenAI chat (as a vLLM server with its
Anthropic endpoint), `model-b` by one speaking OpenAI chat and Responses. The reference agent, a mutant and
mini-swe-agent (in Docker, through the gateway) run on both, paired over the same scenario: every call of a
scenario reaches its own model's endpoint, is metered under that model, and the report shows the grid.
"""

from __future__ import annotations

import contextlib
import sqlite3
import textwrap
from pathlib import Path

import pytest

from staminad.analysis.data import load
from staminad.analysis.report import build, markdown
from tests.helpers.e2e import PARAMS, run_sweep
from tests.helpers.scripts import mini_script as _script
from tests.helpers.standin import StandIn

pytestmark = [pytest.mark.docker, pytest.mark.e2e, pytest.mark.sweep]


@pytest.fixture(scope="session")
def mini_layer(sandbox_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The mini-swe-agent layer (built once, offline, as in `test_mini_e2e`)."""
    from staminad.agents.layers import layer_spec
    from staminad.sandbox.docker.image import build_harness

    tag, _ = build_harness(layer_spec("mini-swe-agent"), tmp_path_factory.mktemp("layer"))
    return tag


def _sweep(tmp: Path, a: StandIn, b: StandIn) -> Path:
    path = tmp / "grid.toml"
    path.write_text(
        textwrap.dedent(f"""
        name = "grid"
        [scenarios]
        seeds = "0"
        turns = {PARAMS.turns}
        changes_per_turn = {PARAMS.changes_per_turn}
        [matrix]
        agents = ["reference", "mutant:no-cascade", "mini-swe-agent"]
        retries = [0]
        [run]
        runtime = "docker"
        parallel = 4
        turn_timeout = 300
        infra_retries = 0
        [llm]
        [[llm.models]]
        name = "model-a"
        endpoint = "{a.url}"
        protocols = ["anthropic-messages", "openai-chat"]
        price = {{ input = 1000.0, output = 1000.0 }}
        concurrency = 2
        [[llm.models]]
        name = "model-b"
        endpoint = "{b.url}"
        protocols = ["openai-chat", "openai-responses"]
        price = {{ input = 2000.0, output = 2000.0 }}
        """)
    )
    return path


@pytest.mark.timeout(900)
def test_three_agents_on_two_endpoints_each_scenario_reaching_its_own_model(tmp_path: Path, mini_layer: str) -> None:
    """Six configurations pass both turns, each calling and metered under only its own model; the grid pairs them."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        StandIn(_script(tmp_path / "a"), model="model-a", apis=("anthropic", "chat")) as a,
        StandIn(_script(tmp_path / "b"), model="model-b", apis=("chat", "responses")) as b,
    ):
        state = tmp_path / "st"
        done = run_sweep(_sweep(tmp_path, a, b), state)
        assert done.returncode == 0, done.stdout + done.stderr
        sent = {"a": list(a.requests), "b": list(b.requests)}
    for side, model in (("a", "model-a"), ("b", "model-b")):
        assert len(sent[side]) == 4 and {r["body"]["model"] for r in sent[side]} == {model}
    query = (
        "SELECT c.name, c.model, s.status, s.turns_passed, "
        "(SELECT GROUP_CONCAT(DISTINCT l.model) FROM llm_calls l WHERE l.scenario_id = s.id), "
        "(SELECT SUM(l.cost) FROM llm_calls l WHERE l.scenario_id = s.id) "
        "FROM configurations c JOIN scenarios s ON s.config_id = c.id ORDER BY c.id"
    )
    with contextlib.closing(sqlite3.connect(state / "staminad.db")) as db:
        rows = {r[0]: r[1:] for r in db.execute(query)}
    assert rows["reference model-a R=0 detailed"] == ("model-a", "done", 2, None, None)  # built-ins call no model
    for model in ("model-a", "model-b"):
        _, status, passed, called, cost = rows[f"mini-swe-agent {model} R=0 detailed"]
        assert (status, passed, called) == ("done", 2, model)
        assert cost > 0
    cost_a, cost_b = (rows[f"mini-swe-agent model-{x} R=0 detailed"][4] for x in "ab")
    assert cost_b == pytest.approx(2 * cost_a)  # each model's own price (the scripts send the same tokens)
    assert "mini-swe-agent model-b R=0 detailed" in done.stdout  # the summary names each configuration's model
    report = build(load(state / "staminad.db"), n_boot=100)
    assert report.grid is not None
    cells = report.grid.cells["R=0 detailed"]
    assert {a: sorted(r) for a, r in cells.items()} == {
        a: ["model-a", "model-b"] for a in ("reference", "mutant:no-cascade", "mini-swe-agent")
    }
    assert cells["mini-swe-agent"]["model-a"].mean == cells["mini-swe-agent"]["model-b"].mean == 2.0
    assert all(v.paired == 1 for row in cells.values() for v in row.values())
    text = markdown(report)
    assert "| harness | model-a | model-b |" in text and "| mini-swe-agent | **2.0" in text
