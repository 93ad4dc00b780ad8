"""End to end: the real Claude Code binary in a real Docker container, driven by the stand-in through the gateway.

The stand-in speaks the Anthropic Messages API (streamed, as the real API sends it) and replays a
scripted conversation that the real `claude -p` acts on with its own Write and Bash tools: at turn 0 it
writes a correct server (the files the reference agent derives from the same texts), checks it
compiles, and finishes; at turn 1 it first claims the change without making it, the tests fail, and
the feedback retry, in the same session (`--resume`), writes the changed server. The sweep mixes
harnesses in Docker: the reference agent runs in the base image, Claude Code in its own layer.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from staminad.bench.scenario import ScenarioParams
from tests.helpers.e2e import attempt_rows, run_sweep, scenario_end, started_outcomes, write_sweep
from tests.helpers.scripts import claude_script as _script
from tests.helpers.standin import Fault, StandIn
from tests.helpers.standin import OutageAt as _OutageAt

pytestmark = [
    pytest.mark.skipif(shutil.which("docker") is None, reason="needs Docker"),
    pytest.mark.docker,
    pytest.mark.e2e,
    pytest.mark.sweep,
]

PARAMS = ScenarioParams(turns=1, changes_per_turn=2)
RUN_TIMEOUT = 600  # seconds for one whole `staminad run`; each harness call is bounded by turn_timeout


@pytest.fixture(scope="session")
def claude_image(sandbox_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The Claude Code layer (the binary from the Agent SDK wheel), built offline once per machine."""
    from staminad.agents.layers import layer_spec
    from staminad.sandbox.docker.image import build_harness

    tag, _ = build_harness(layer_spec("claude-code"), tmp_path_factory.mktemp("layer"))
    return tag


def _sweep(
    tmp: Path, standin: StandIn, agents: list[str], extra_llm: str = "", infra_retries: int = 2, price: float = 1.0
) -> Path:
    return write_sweep(
        tmp,
        "claude-e2e",
        agents,
        standin.url,
        "standin-1",
        PARAMS,
        retries=1,
        turn_timeout=180,
        infra_retries=infra_retries,
        price=(price, price),
        extra_llm=extra_llm,
    )


def _run(sweep: Path, state: Path) -> subprocess.CompletedProcess[str]:
    return run_sweep(sweep, state, RUN_TIMEOUT)


def _texts(request: dict[str, Any]) -> list[str]:
    return [json.dumps(m) for m in request["body"]["messages"]]


@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_claude_code_passes_turns_with_a_feedback_retry_in_one_session_beside_the_reference(
    tmp_path: Path, claude_image: str, sandbox_image: str
) -> None:
    """Reference and claude-code, each in its own image, pass both turns; the feedback retry resumes the session."""
    with StandIn(_script(tmp_path)) as standin:
        sweep = _sweep(tmp_path, standin, ["reference", "claude-code"])
        state = tmp_path / "st"
        done = _run(sweep, state)
        assert done.returncode == 0, done.stdout + done.stderr
        requests = list(standin.requests)
    db = sqlite3.connect(state / "staminad.db")
    rows = db.execute(
        "SELECT c.agent, s.status, s.turns_passed, s.sandbox FROM scenarios s "
        "JOIN configurations c ON c.id = s.config_id ORDER BY c.agent"
    ).fetchall()
    assert [r[:3] for r in rows] == [("claude-code", "done", 2), ("reference", "done", 2)], done.stdout
    images = {r[0]: json.loads(r[3])["image"] for r in rows}
    assert images == {"claude-code": claude_image, "reference": "staminabench/sandbox:latest"}
    assert started_outcomes(state, "claude-code") == [(0, 1, "pass"), (1, 1, "fail"), (1, 2, "pass")]
    calls = db.execute(
        "SELECT a.turn, a.attempt, l.api, l.input_tokens, l.output_tokens, l.cost FROM llm_calls l "
        "JOIN attempts a ON a.id = l.attempt_id ORDER BY l.id"
    ).fetchall()
    model_calls = [c for c in calls if c[2] == "anthropic"]
    assert [c[:2] for c in model_calls] == [(0, 1)] * 3 + [(1, 1)] + [(1, 2)] * 3, calls
    assert all(c[3] > 0 and c[4] > 0 and c[5] > 0 for c in model_calls)
    assert all(c[5] == 0 for c in calls if c[2] != "anthropic")  # count_tokens: metered, generates nothing
    requests = [r for r in requests if "count_tokens" not in r["path"]]
    assert len(requests) == 7 and all(r["path"].startswith("/v1/messages") for r in requests)
    assert all("gateway" not in (r["headers"].get("x-api-key") or "") for r in requests)  # the gateway's key swap
    assert all(r["body"].get("stream") is True for r in requests)
    turn1, retry = _texts(requests[3]), _texts(requests[4])
    assert any("initial_specification.md" in t for t in turn1[:3])  # turn 1 resumed the turn-0 conversation
    assert any("The server is written and compiles." in t for t in turn1)
    assert any("The change is made." in t for t in retry)  # the retry carries the failed attempt's exchange
    assert len(retry) > len(turn1) and retry[: len(turn1) - 1] == turn1[:-1]  # the same history, grown
    assert any("make the following changes" in t for t in retry[len(turn1) - 1 : len(turn1) + 1])


@pytest.mark.timeout(RUN_TIMEOUT + 60)
@pytest.mark.parametrize(("fault", "turn"), [(Fault("status", 503), 0), (Fault("reset"), 1)], ids=["503", "reset"])
def test_an_upstream_outage_is_an_infra_retry_for_claude_code(
    tmp_path: Path, claude_image: str, fault: Fault, turn: int
) -> None:
    """An outage makes the attempt `llm_unavailable`; the infra retry passes with R and the history clean."""
    script = _script(tmp_path, false_claim=False)
    with _OutageAt(script, len(script) - 3 * turn, [fault] * 2) as standin:  # turn 0: 3 replies, turn 1: 3
        sweep = _sweep(tmp_path, standin, ["claude-code"], extra_llm="outage_timeout = 1")
        done = _run(sweep, tmp_path / "st")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = attempt_rows(tmp_path / "st")
    expected: list[tuple[int, int, int, str, str | None]] = [(0, 1, 0, "pass", None), (1, 1, 0, "pass", None)]
    # A 503 is retried by the gateway until the outage timeout: one outage. A connection lost after the request
    # went out is never sent again (the model may still be working on it): each reset is an outage of its own.
    outages = 2 if fault.kind == "reset" else 1
    expected[turn : turn + 1] = [(turn, 1, i, "infra", "llm_unavailable") for i in range(outages)]
    expected[turn + outages : turn + outages] = [(turn, 1, outages, "pass", None)]
    assert rows == expected, done.stdout
    assert scenario_end(tmp_path / "st")[:2] == ("done", 2)
    home = next((tmp_path / "st" / "sandboxes").glob("*/*/workspace/.home"))
    session = (home / ".staminabench" / "claude-code.session").read_text()
    history = next(home.glob(f".claude/projects/*/{session}.jsonl")).read_text()
    records = [json.loads(line) for line in history.splitlines()]
    prompts = [
        json.dumps(r["message"]["content"])
        for r in records
        if r.get("type") == "user" and "tool_result" not in json.dumps(r["message"]["content"])
    ]
    # The retried call left no trace in the session it resumes: each prompt once, no API error.
    assert "API Error" not in history and len(prompts) == 2, prompts
    assert "Implement the REST API server" in prompts[0] and "make the following changes" in prompts[1]


@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_a_cost_cap_ends_a_claude_code_scenario_capped(tmp_path: Path, claude_image: str) -> None:
    """A cap below one call's cost: turn 0 (written by the first call's tools) passes, then the scenario is `capped`."""
    with StandIn(_script(tmp_path, false_claim=False)) as standin:
        sweep = _sweep(tmp_path, standin, ["claude-code"], extra_llm="scenario_cost_cap = 0.001")
        done = _run(sweep, tmp_path / "st")
    assert done.returncode == 0, done.stdout + done.stderr
    status, passed, reason = scenario_end(tmp_path / "st")
    assert (status, passed) == ("capped", 1), done.stdout
    assert (reason or "").startswith("scenario cost cap of $0.00 reached")
