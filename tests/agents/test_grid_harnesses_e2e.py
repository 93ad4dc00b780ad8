"""End to end: one sweep of three real harnesses x two models, each model behind its own stand-in endpoint.

mini-swe-agent (OpenAI chat), Claude Code (Anthropic messages) and Codex (OpenAI Responses) run in Docker from
their offline-built layers, through the gateway, on both models. Each model's stand-in serves all three
protocols on one base URL (as vLLM serves chat, Responses and Anthropic messages) and keeps one script per
protocol, so the three harnesses sharing it each get their own conversation. On seed 0 every configuration
passes both turns: the results pair across harnesses and models, every call of a scenario reached its own
model's endpoint and was metered under that model at its price, the report shows the harness x model grid,
and the viewer compares each harness across the two models.
"""

from __future__ import annotations

import contextlib
import html
import re
import sqlite3
import textwrap
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from staminad.analysis.data import load
from staminad.analysis.report import build, markdown
from staminad.viewer.app import create_app
from staminad.viewer.render import LiveLinks, StaticLinks
from staminad.viewer.site import write_site
from tests.helpers.e2e import CODEX_MODEL, PARAMS, run_sweep
from tests.helpers.scripts import claude_script, codex_script, mini_script
from tests.helpers.standin import PerApi, Reply

pytestmark = [pytest.mark.docker, pytest.mark.e2e, pytest.mark.sweep]

HARNESSES = ("mini-swe-agent", "claude-code", "codex")
# Two model names codex 0.163.0's bundled model list carries (so it declares its real tools, apply_patch among
# them); any name suits the others. Model: its price, dollars per million tokens in and out.
MODELS = {CODEX_MODEL: 1000.0, "gpt-5.6-sol": 2000.0}
# The stand-in's API each harness speaks, and how many model calls its script answers (both turns, no retry).
CALLS = {"mini-swe-agent": ("chat", 4), "claude-code": ("anthropic", 6), "codex": ("responses", 5)}


@pytest.fixture(scope="session")
def layers(sandbox_image: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The three harnesses' layers, built offline once per machine (as each harness's own end-to-end test)."""
    from staminad.agents.layers import layer_spec
    from staminad.sandbox.docker.image import build_harness

    return {name: build_harness(layer_spec(name), tmp_path_factory.mktemp("layer"))[0] for name in HARNESSES}


def _scripts(tmp: Path) -> dict[str, list[Reply]]:
    """One model's side for all three harnesses, by the API each speaks: both turns pass at the first attempt."""
    for name in HARNESSES:
        (tmp / name).mkdir(parents=True)
    return {
        "chat": mini_script(tmp / "mini-swe-agent"),
        "anthropic": claude_script(tmp / "claude-code", false_claim=False),
        "responses": codex_script(tmp / "codex", idle_attempt=False),
    }


def _sweep(tmp: Path, standins: dict[str, PerApi]) -> Path:
    models = "".join(
        f"""
        [[llm.models]]
        name = "{name}"
        endpoint = "{standin.url}"
        protocols = ["openai-chat", "openai-responses", "anthropic-messages"]
        price = {{ input = {MODELS[name]}, output = {MODELS[name]} }}
        """
        for name, standin in standins.items()
    )
    path = tmp / "grid.toml"
    path.write_text(
        textwrap.dedent(f"""
        name = "grid-harnesses"
        [scenarios]
        seeds = "0"
        turns = {PARAMS.turns}
        changes_per_turn = {PARAMS.changes_per_turn}
        [matrix]
        agents = {list(HARNESSES)!r}
        retries = [0]
        [run]
        runtime = "docker"
        parallel = 6
        turn_timeout = 300
        infra_retries = 0
        [llm]
        """)
        + textwrap.dedent(models)
    )
    return path


def _text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


@pytest.mark.timeout(1800)
def test_three_harnesses_on_two_models_pair_meter_report_and_compare(tmp_path: Path, layers: dict[str, str]) -> None:
    """Three harnesses x two models pass, reach and meter only their model, and pair in the report and viewer."""
    with contextlib.ExitStack() as stack:
        standins = {name: PerApi(_scripts(tmp_path / f"model{i}"), model=name) for i, name in enumerate(MODELS)}
        for standin in standins.values():
            stack.enter_context(standin)
        state = tmp_path / "st"
        done = run_sweep(_sweep(tmp_path, standins), state, timeout=1500)
        assert done.returncode == 0, done.stdout + done.stderr
        sent = {name: list(s.requests) for name, s in standins.items()}
    for name, requests in sent.items():
        calls = [r for r in requests if "count_tokens" not in r["path"]]  # Claude Code's counts generate nothing
        assert {r["body"]["model"] for r in requests} == {name}, name  # every call asked for this model
        by_path = {api: [r for r in calls if _api(r["path"]) == api] for api, _ in CALLS.values()}
        assert {api: len(rs) for api, rs in by_path.items()} == dict(CALLS.values()), (name, done.stdout)
        assert len(calls) == sum(n for _, n in CALLS.values())  # nothing else reached this endpoint
    query = (
        "SELECT c.agent, c.model, s.seed, s.status, s.turns_passed, l.model, l.api, l.input_tokens, "
        "l.output_tokens, l.cached_tokens, l.cost FROM configurations c JOIN scenarios s ON s.config_id = c.id "
        "LEFT JOIN llm_calls l ON l.scenario_id = s.id ORDER BY l.id"
    )
    with contextlib.closing(sqlite3.connect(state / "staminad.db")) as db:
        rows = db.execute(query).fetchall()
        (sweep_id,) = db.execute("SELECT id FROM sweeps").fetchone()
    ends = {(r[0], r[1]): r[2:5] for r in rows}
    assert ends == {(h, m): (0, "done", 2) for h in HARNESSES for m in MODELS}, done.stdout  # paired on seed 0
    for agent, model, _, _, _, metered, api, tin, tout, cached, cost in rows:
        assert metered == model, (agent, model, metered)  # metered under its scenario's model
        price = MODELS[model] if api != "other" else 0.0  # Claude Code's token counts generate nothing: free
        assert cost == pytest.approx((tin + tout) * price / 1e6) and cached == 0, (agent, model, api)
    for agent, (api, n) in CALLS.items():
        for model in MODELS:
            priced = [r for r in rows if r[:2] == (agent, model) and r[10] > 0]
            assert len(priced) == n and {r[6] for r in priced} == {api}, (agent, model)
    _report_grid(state)
    _viewer_compares_across_models(state, sweep_id, tmp_path / "site")


def _api(path: str) -> str:
    path = path.split("?", 1)[0]
    return "anthropic" if path.endswith("/messages") else "responses" if path.endswith("/responses") else "chat"


def _report_grid(state: Path) -> None:
    """The report's grid: a row per harness, a column per model, every cell 2 turns over one paired scenario."""
    report = build(load(state / "staminad.db"), n_boot=100)
    assert report.grid is not None
    cells = report.grid.cells["R=0 detailed"]
    assert {a: sorted(r) for a, r in cells.items()} == {h: sorted(MODELS) for h in HARNESSES}
    assert all(v.mean == 2.0 and v.paired == 1 for row in cells.values() for v in row.values()), cells
    text = markdown(report)
    first, second = MODELS
    assert f"| harness | {first} | {second} |" in text, text
    for harness in HARNESSES:
        assert f"| {harness} | **2.0" in text, text


def _viewer_compares_across_models(state: Path, sweep_id: str, site: Path) -> None:
    """The viewer's headline names each configuration's model; its comparison of a harness on one model against
    the same harness on the other pairs their one shared scenario, both models named, live and in the static
    site (whose sweep page links each harness's comparison across the models)."""
    client = TestClient(create_app(state))
    sweep = _text(client.get(LiveLinks().sweep(sweep_id)).text)
    write_site(state, site)
    static = StaticLinks()
    listed = (site / static.sweep(sweep_id)).read_text()
    first, second = MODELS
    for harness in HARNESSES:
        for model in MODELS:
            assert f"{harness} {model} R=0 detailed {model}" in sweep, sweep
        a, b = (f"{harness} {m} R=0 detailed" for m in (first, second))
        page = client.get(LiveLinks().compare(sweep_id, a, b))
        assert page.status_code == 200, page.text
        assert f'href="{static.compare(sweep_id, a, b)}"' in listed, listed
        for text in (_text(page.text), _text((site / static.compare(sweep_id, a, b)).read_text())):
            assert f"A = {a} , B = {b} on 1 shared scenarios" in text, text
            assert "A ahead on 0, B ahead on 0, tied on 1" in text, text
