"""End to end: the real Codex CLI binary in a real Docker container, driven by the stand-in through the gateway.

The stand-in speaks the OpenAI Responses API, streamed, with function calls (`exec_command`) and the
free-form `apply_patch` custom tool, so codex itself runs the commands and applies the patches. Turn 0:
the model adds the reference agent's files with apply_patch, checks them with a command, and finishes.
Turn 1: the first attempt changes nothing (its tests fail), the feedback retry rewrites the files with a
command. `staminad run` must pass both turns, meter every call, and keep one codex session throughout:
each request carries the whole exchange before it (checked at the stand-in).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.helpers.e2e import (
    CODEX_MODEL as MODEL,
)
from tests.helpers.e2e import (
    attempt_rows,
    run_sweep,
    scenario_end,
    started_outcomes,
)
from tests.helpers.e2e import codex_sweep as _sweep
from tests.helpers.scripts import codex_script as _script
from tests.helpers.standin import Fault, OutageAt, StandIn

pytestmark = [pytest.mark.docker, pytest.mark.e2e, pytest.mark.sweep]


@pytest.fixture(scope="session")
def codex_image(sandbox_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The Codex layer, built offline from the PyPI wheel that carries the real binary."""
    from staminad.agents.layers import layer_spec
    from staminad.sandbox.docker.image import build_harness

    tag, _ = build_harness(layer_spec("codex"), tmp_path_factory.mktemp("layer"))
    return tag


def _run(sweep: Path, state: Path) -> subprocess.CompletedProcess[str]:
    return run_sweep(sweep, state)


def _texts(request: dict[str, object]) -> list[str]:
    body = request["body"]
    assert isinstance(body, dict)
    return [json.dumps(item) for item in body["input"]]


@pytest.mark.timeout(900)
def test_codex_passes_two_turns_and_a_feedback_retry_in_one_session(tmp_path: Path, codex_image: str) -> None:
    """Turn 0 passes, turn 1 passes on its feedback retry; 6 metered calls; one session carries it all."""
    with StandIn(_script(tmp_path), model=MODEL) as standin:
        state = tmp_path / "st"
        done = _run(_sweep(tmp_path, standin, codex_image), state)
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
    assert [c[:2] for c in calls] == [(0, 1)] * 3 + [(1, 1)] + [(1, 2)] * 2
    assert all(c[2] > 0 and c[3] > 0 and c[4] > 0 for c in calls)
    assert len(requests) == 6 and all(r["path"].endswith("/responses") for r in requests)
    assert all(r["headers"].get("Authorization") != "Bearer gateway" for r in requests)
    assert all(r["body"].get("stream") is True for r in requests)
    tools = {t.get("name") for t in requests[0]["body"]["tools"]}
    assert {"exec_command", "apply_patch"} <= tools and "web_search" not in str(requests[0]["body"]["tools"])
    # codex ran the tools: the patch's and the command's outputs came back in the next request
    assert any("custom_tool_call_output" in t and "Success" in t for t in _texts(requests[1]))
    assert any("function_call_output" in t and "compiled" in t for t in _texts(requests[2]))
    retry = _texts(requests[4])
    assert any("initial_specification.md" in t for t in retry[:8])  # the turn-0 prompt is still there
    assert any("The server is written and compiles." in t for t in retry)  # and how turn 0 ended
    assert any("Nothing needs to change." in t for t in retry)  # and the failed attempt
    assert len(retry) > len(_texts(requests[3])) > len(_texts(requests[2]))  # one growing session
    sessions = {r["headers"].get("Session-Id") or r["headers"].get("session-id") for r in requests}
    assert len(sessions) == 1, sessions
    _capture(state, "session")


def _capture(state: Path, label: str) -> None:
    """Keep what codex printed, to refresh the recordings from (STAMINABENCH_CAPTURE=DIR)."""
    target = os.environ.get("STAMINABENCH_CAPTURE")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        for out in sorted(state.glob("**/.staminabench/codex-*.out")):
            (Path(target) / f"{label}-{out.name}").write_text(out.read_text())


@pytest.mark.timeout(900)
def test_a_model_outage_is_an_infra_retry_not_a_failed_attempt(tmp_path: Path, codex_image: str) -> None:
    """Upstream 503s past the outage timeout are `llm_unavailable`; the infra retry passes turn 0, same attempt."""
    with StandIn(_script(tmp_path), model=MODEL) as standin:
        standin.faults.extend([Fault("status", 503)] * 2)
        done = _run(_sweep(tmp_path, standin, codex_image, extra_llm="outage_timeout = 1"), tmp_path / "st")
    assert done.returncode == 0, done.stdout + done.stderr
    _capture(tmp_path / "st", "outage")
    rows = attempt_rows(tmp_path / "st")
    assert rows[0] == (0, 1, 0, "infra", "llm_unavailable"), rows
    assert rows[1] == (0, 1, 1, "pass", None), rows
    assert scenario_end(tmp_path / "st")[:2] == ("done", 2)


@pytest.mark.timeout(900)
def test_a_cost_cap_stops_the_scenario_with_its_reason(tmp_path: Path, codex_image: str) -> None:
    """With a cap below one turn's spend, turn 0 is scored, then the scenario ends `capped`, naming the cap."""
    with StandIn(_script(tmp_path), model=MODEL) as standin:
        done = _run(_sweep(tmp_path, standin, codex_image, extra_llm="scenario_cost_cap = 0.01"), tmp_path / "st")
    assert done.returncode == 0, done.stdout + done.stderr
    status, passed, reason = scenario_end(tmp_path / "st")
    assert (status, passed) == ("capped", 1) and (reason or "").startswith("scenario cost cap of $0.01 reached")
    assert "capped" in done.stdout


@pytest.mark.timeout(900)
def test_an_outage_at_turn_1_is_retried_on_the_thread_as_it_was(tmp_path: Path, codex_image: str) -> None:
    """An outage at turn 1 is `llm_unavailable`; the infra retry resumes the thread with the prompt once."""
    with OutageAt(_script(tmp_path), 3, [Fault("status", 503)] * 2, model=MODEL) as standin:  # turn 1: 3 left
        done = _run(_sweep(tmp_path, standin, codex_image, extra_llm="outage_timeout = 1"), tmp_path / "st")
        requests = list(standin.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = attempt_rows(tmp_path / "st")
    assert rows[:2] == [(0, 1, 0, "pass", None), (1, 1, 0, "infra", "llm_unavailable")], rows
    assert rows[-1] == (1, 2, 0, "pass", None), rows
    retry = _texts(requests[-3])  # the infra retry's one call ("Nothing needs to change."), then attempt 2's two
    assert sum("make the following changes" in t for t in retry) == 1, retry
    assert any("The server is written and compiles." in t for t in retry)  # turn 0, still there
    assert not any("staminabench gateway" in t for t in retry), retry
