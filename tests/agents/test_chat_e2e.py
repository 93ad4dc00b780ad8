"""End to end: Chat Completions harnesses on the trixie base (Mistral Vibe, Kimi CLI) in Docker, through the gateway.

The stand-in answers with `tool_calls` for the harness's own shell tool (vibe's `bash`, kimi's `Shell`), so
the harness runs the commands. Turn 0 writes the reference agent's files and finishes; turn 1's first
attempt changes nothing, its feedback retry rewrites the files. Both turns pass via `staminad run`; every
call is metered against its attempt; the retry's request carries the earlier exchange (the harness resumed
its session by id). Issue 16's checks for each: an upstream outage in turn 1 is an infra retry that resumes
the session clean, and a cost cap ends the scenario `capped`.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from staminad.agents.harnesses import HARNESSES
from staminad.bench.readme import render_readme
from staminad.bench.scenario import generate
from staminad.bench.texts import change_prompt, initial_prompt, render_spec
from staminad.reference import agent as reference_agent
from tests.helpers.e2e import PARAMS, attempt_rows, scenario_end, started_outcomes
from tests.helpers.e2e import codex_sweep as _sweep
from tests.helpers.e2e import rewrite_files as _rewrite
from tests.helpers.e2e import run_sweep as _run
from tests.helpers.standin import Fault, Reply, StandIn
from tests.helpers.standin import OutageAt as _OutageAt

pytestmark = [pytest.mark.docker, pytest.mark.e2e, pytest.mark.sweep]

MODEL = "standin-1"


# The Chat Completions harnesses on the trixie base whose shell tool is pinned (`Harness.shell`), each taking
# {"command": ...}: Mistral Vibe's `bash`, Kimi CLI's `Shell`.
SHELL_TOOL = {
    name: h.shell[0]
    for name, h in HARNESSES.items()
    if h.shell is not None and h.layer.base == "trixie" and h.protocol == "openai-chat"
}


def _layer(name: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The harness's layer on the trixie base, built offline from PyPI wheels for Python 3.13."""
    from staminad.agents.layers import layer_spec
    from staminad.sandbox.docker.image import build_harness

    tag, _ = build_harness(layer_spec(name), tmp_path_factory.mktemp("layer"))
    return tag


def _script(tmp: Path, tool: str, false_claim: bool = True) -> list[Reply]:
    """Write the server with bash, finish; a do-nothing attempt (unless not `false_claim`); the fix, finish."""
    scenario = generate(0, PARAMS)
    work = tmp / "scripted"
    work.mkdir()
    (work / "README.md").write_text(render_readme("python"))
    (work / "initial_specification.md").write_text(render_spec(scenario.initial))
    reference_agent.run(work, initial_prompt("python"), None, False)
    replies = [
        Reply(tool_calls=[{"name": tool, "arguments": {"command": _rewrite(work)}}]),
        Reply(content="The server is written and compiles."),
        *([Reply(content="Nothing needs to change.")] if false_claim else []),
    ]
    reference_agent.run(work, change_prompt(scenario.turns[0], scenario.initial)[0], None, False)
    return [
        *replies,
        Reply(tool_calls=[{"name": tool, "arguments": {"command": _rewrite(work)}}]),
        Reply(content="Applied the changes."),
    ]


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(SHELL_TOOL))
def test_passes_two_turns_and_a_feedback_retry_in_one_session(
    name: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Turn 0 passes, turn 1 on its retry; 5 metered chat calls; the retry continues the same conversation."""
    image = _layer(name, tmp_path_factory)
    with StandIn(_script(tmp_path, SHELL_TOOL[name]), model=MODEL) as standin:
        state = tmp_path / "st"
        sweep = _sweep(tmp_path, standin, image, agent=name, model=MODEL)
        done = _run(sweep, state)
        assert done.returncode == 0, done.stdout + done.stderr
        requests = list(standin.requests)
    db = sqlite3.connect(state / "staminad.db")
    outcomes = started_outcomes(state)
    assert [o[:2] for o in outcomes] == [(0, 1), (1, 1), (1, 2)], (outcomes, done.stdout)
    assert outcomes[0][2] == "pass" and outcomes[1][2] != "pass" and outcomes[2][2] == "pass", outcomes
    calls = db.execute(
        "SELECT a.turn, a.attempt, l.input_tokens, l.output_tokens, l.cost FROM llm_calls l "
        "JOIN attempts a ON a.id = l.attempt_id ORDER BY l.id"
    ).fetchall()
    assert [c[:2] for c in calls] == [(0, 1)] * 2 + [(1, 1)] + [(1, 2)] * 2
    assert all(c[2] > 0 and c[3] > 0 and c[4] > 0 for c in calls)
    assert len(requests) == 5 and all(r["path"].endswith("/chat/completions") for r in requests)
    assert SHELL_TOOL[name] in {t["function"]["name"] for t in requests[0]["body"]["tools"]}
    answered = requests[1]["body"]["messages"]
    assert any(m.get("role") == "tool" and "rewritten" in str(m.get("content")) for m in answered)
    retry = [json.dumps(m) for m in requests[3]["body"]["messages"]]
    assert any("initial_specification.md" in t for t in retry)
    assert any("The server is written and compiles." in t for t in retry)
    assert any("Nothing needs to change." in t for t in retry)
    target = os.environ.get("STAMINABENCH_CAPTURE")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        for out in sorted(state.glob(f"**/.staminabench/{name}-*.out")):
            (Path(target) / out.name).write_text(out.read_text())


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(SHELL_TOOL))
def test_an_upstream_outage_is_an_infra_retry_that_resumes_the_session_clean(
    name: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """503s past the outage timeout in turn 1: `llm_unavailable`, the infra retry passes, R and history clean."""
    image = _layer(name, tmp_path_factory)
    script = _script(tmp_path, SHELL_TOOL[name], false_claim=False)
    with _OutageAt(script, 2, [Fault("status", 503)] * 2) as standin:  # turn 1's two replies left
        sweep = _sweep(tmp_path, standin, image, extra_llm="outage_timeout = 1", agent=name, model=MODEL)
        done = _run(sweep, tmp_path / "st")
        requests = list(standin.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = attempt_rows(tmp_path / "st")
    assert rows == [(0, 1, 0, "pass", None), (1, 1, 0, "infra", "llm_unavailable"), (1, 1, 1, "pass", None)], rows
    assert scenario_end(tmp_path / "st")[:2] == ("done", 2)
    # The retry's first request (the last two are its calls) resends the session once, no trace of the outage.
    retry = [json.dumps(m) for m in requests[-2]["body"]["messages"]]
    assert sum("make the following changes" in t for t in retry) == 1, retry
    assert sum("The server is written and compiles." in t for t in retry) == 1, retry
    assert not any("staminabench gateway" in t or "upstream answered" in t for t in retry), retry


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(SHELL_TOOL))
def test_a_cost_cap_ends_the_scenario_capped(
    name: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A cap below one call's cost: turn 0 (written by the first call's command) passes, then `capped`."""
    image = _layer(name, tmp_path_factory)
    with StandIn(_script(tmp_path, SHELL_TOOL[name], false_claim=False), model=MODEL) as standin:
        sweep = _sweep(tmp_path, standin, image, extra_llm="scenario_cost_cap = 0.001", agent=name, model=MODEL)
        done = _run(sweep, tmp_path / "st")
    assert done.returncode == 0, done.stdout + done.stderr
    status, passed, reason = scenario_end(tmp_path / "st")
    assert (status, passed) == ("capped", 1), done.stdout
    assert (reason or "").startswith("scenario cost cap of $0.00 reached"), reason
