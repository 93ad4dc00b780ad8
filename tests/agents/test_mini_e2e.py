"""End to end: mini-swe-agent in a real Docker container, driven by the stand-in model through the gateway.

The stand-in replays a scripted conversation: at turn 0 the model writes a correct server (the files the
reference agent derives from the same texts) and submits; at turn 1 it applies the change and submits.
`staminad run` must pass both turns, meter every call through the gateway, and keep one conversation:
the turn-1 request carries the whole turn-0 exchange before the new prompt.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from staminad.bench.scenario import ScenarioParams
from tests.helpers.e2e import attempt_rows, run_sweep, scenario_end, started_outcomes, write_sweep
from tests.helpers.scripts import mini_script as _script
from tests.helpers.standin import Fault, OutageAt, Reply, StandIn

pytestmark = [pytest.mark.docker, pytest.mark.e2e, pytest.mark.sweep]

PARAMS = ScenarioParams(turns=1, changes_per_turn=2)


@pytest.fixture(scope="session")
def mini_image(sandbox_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The mini-swe-agent layer, built offline from PyPI wheels fetched on this host."""
    from staminad.agents.layers import layer_spec
    from staminad.sandbox.docker.image import build_harness

    tag, _ = build_harness(layer_spec("mini-swe-agent"), tmp_path_factory.mktemp("layer"))
    return tag


@pytest.mark.timeout(900)
def test_mini_swe_agent_passes_two_turns_through_the_gateway(tmp_path: Path, mini_image: str) -> None:
    """Turns 0 and 1 pass in Docker; 4 metered calls; turn 1 continues the turn-0 conversation."""
    with StandIn(_script(tmp_path)) as standin:
        sweep = _sweep(tmp_path, standin, mini_image, infra_retries=0)
        state = tmp_path / "st"
        done = _run(sweep, state)
        assert done.returncode == 0, done.stdout + done.stderr
        requests = list(standin.requests)
    db = sqlite3.connect(state / "staminad.db")
    outcomes = [(turn, outcome) for turn, _, outcome in started_outcomes(state)]
    assert outcomes == [(0, "pass"), (1, "pass")], (outcomes, done.stdout)
    calls = db.execute(
        "SELECT a.turn, l.input_tokens, l.output_tokens, l.cost FROM llm_calls l "
        "JOIN attempts a ON a.id = l.attempt_id ORDER BY l.id"
    ).fetchall()
    assert [c[0] for c in calls] == [0, 0, 1, 1]
    assert all(c[1] > 0 and c[2] > 0 and c[3] > 0 for c in calls)
    assert "tokens" in done.stdout and " $" in done.stdout  # the summary reports what the model calls cost
    assert len(requests) == 4 and all(r["headers"].get("Authorization") != "Bearer gateway" for r in requests)
    turn1 = requests[2]["body"]["messages"]
    texts = [json.dumps(m) for m in turn1]
    assert any("initial_specification.md" in t for t in texts[:3])  # the turn-0 prompt is still there
    assert sum("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in t for t in texts) >= 1  # and how turn 0 ended
    assert "Now make the following changes" in texts[-1] or "make the following changes" in texts[-1]


def _sweep(tmp: Path, standin: StandIn, image: str, extra_llm: str = "", infra_retries: int = 2) -> Path:
    return write_sweep(
        tmp,
        "mini-infra",
        ["mini-swe-agent"],
        standin.url,
        "standin-1",
        PARAMS,
        retries=0,
        image=image,
        infra_retries=infra_retries,
        price=(1000.0, 1000.0),
        extra_llm=extra_llm,
    )


def _run(sweep: Path, state: Path) -> subprocess.CompletedProcess[str]:
    return run_sweep(sweep, state)


@pytest.mark.timeout(900)
def test_a_model_outage_is_an_infra_retry_not_a_failed_attempt(tmp_path: Path, mini_image: str) -> None:
    """Upstream 503s past the outage timeout are `llm_unavailable`; the infra retry passes both turns with R=0."""
    with StandIn(_script(tmp_path)) as standin:
        standin.faults.extend(
            [Fault("status", 503)] * 2
        )  # the second 503 comes after 0.5-1 s of backoff; the next pause (1-2 s) would pass the 1 s timeout
        sweep = _sweep(tmp_path, standin, mini_image, extra_llm="outage_timeout = 1")
        done = _run(sweep, tmp_path / "st")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = attempt_rows(tmp_path / "st")
    assert rows[0] == (0, 1, 0, "infra", "llm_unavailable")
    assert rows[1:] == [(0, 1, 1, "pass", None), (1, 1, 0, "pass", None)]  # attempt 1 both times: R untouched
    assert scenario_end(tmp_path / "st")[:2] == ("done", 2)


@pytest.mark.timeout(900)
def test_a_cost_cap_stops_the_scenario_with_its_reason(tmp_path: Path, mini_image: str) -> None:
    """With a cap below one turn's spend, turn 0 is scored, then the scenario ends `capped`, naming the cap."""
    with StandIn(_script(tmp_path)) as standin:
        sweep = _sweep(tmp_path, standin, mini_image, extra_llm="scenario_cost_cap = 0.5")
        done = _run(sweep, tmp_path / "st")
    assert done.returncode == 0, done.stdout + done.stderr
    status, passed, reason = scenario_end(tmp_path / "st")
    assert (status, passed) == ("capped", 1) and (reason or "").startswith("scenario cost cap of $0.50 reached")
    assert "capped" in done.stdout


def _host_address() -> str:
    """An IPv4 address of this host on an interface that is not a bridge of a Docker engine."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        name, address = line.split()[1], line.split()[3].split("/")[0]
        if not name.startswith(("docker", "br-", "veth")):
            return address
    raise AssertionError(f"no IPv4 address outside Docker's bridges on this host: {out!r}")


@pytest.mark.timeout(900)
def test_a_harness_on_another_engine_reaches_the_gateway_at_its_entry_s_address(
    tmp_path: Path, mini_image: str, second_engine: Any
) -> None:
    """mini-swe-agent on a second engine, sealed to its entry's `gateway` address, passes with every call metered."""
    address = _host_address()
    with StandIn(_script(tmp_path)) as standin:
        sweep = write_sweep(
            tmp_path,
            "mini-elsewhere",
            ["mini-swe-agent"],
            standin.url,
            "standin-1",
            PARAMS,
            retries=0,
            image=mini_image,
            infra_retries=0,
            price=(1000.0, 1000.0),
            extra_run=f'engines = [{{ url = "{second_engine.url}", slots = 1, gateway = "{address}" }}]',
        )
        done = run_sweep(sweep, tmp_path / "st")
        requests = list(standin.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    assert attempt_rows(tmp_path / "st") == [(0, 1, 0, "pass", None), (1, 1, 0, "pass", None)]
    assert len(requests) == 4
    with contextlib.closing(sqlite3.connect(tmp_path / "st" / "staminad.db")) as db:
        (sandbox,) = db.execute("SELECT sandbox FROM scenarios").fetchone()
        assert db.execute("SELECT COUNT(*) FROM llm_calls").fetchone() == (4,)
    assert second_engine.url in sandbox  # it ran there


@pytest.mark.timeout(900)
def test_an_outage_at_turn_1_is_retried_on_the_session_as_it_was(tmp_path: Path, mini_image: str) -> None:
    """An outage at turn 1 is `llm_unavailable`; the infra retry sees the turn-1 prompt once and passes."""
    with OutageAt(_script(tmp_path), 2, [Fault("status", 503)] * 2) as standin:  # turn 1's two replies left
        sweep = _sweep(tmp_path, standin, mini_image, extra_llm="outage_timeout = 1")
        done = _run(sweep, tmp_path / "st")
        requests = list(standin.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = attempt_rows(tmp_path / "st")
    assert rows == [(0, 1, 0, "pass", None), (1, 1, 0, "infra", "llm_unavailable"), (1, 1, 1, "pass", None)], rows
    retry = [json.dumps(m) for m in requests[-2]["body"]["messages"]]
    assert sum("make the following changes" in t for t in retry) == 1, retry
    assert sum("initial_specification.md" in t for t in retry) >= 1  # turn 0 is still there, once
    assert not any("staminabench gateway" in t or "ServiceUnavailable" in t for t in retry), retry


@pytest.mark.timeout(900)
def test_the_driver_compacts_its_context_past_the_model_s_window_share(tmp_path: Path, mini_image: str) -> None:
    """Past its window share the driver asks for a summary and sends it with the kept parts; both turns pass."""
    script = _script(tmp_path)
    look = Reply(tool_calls=[{"name": "bash", "arguments": {"command": "ls -l"}}])
    summary = Reply(content="SUMMARY-OF-EARLIER: turn 0 wrote server.py, config.json and run_server.sh.")
    # turn 1: the rewrite, a look, then (compaction: turn 0's write is older than the 6 recent messages) the
    # summary, then the submit
    script[3:3] = [look, summary]
    with StandIn(script) as standin:
        sweep = _sweep(tmp_path, standin, mini_image, extra_llm="context_window = 2000\ncompact_at = 0.5")
        done = _run(sweep, tmp_path / "st")
        requests = list(standin.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    assert attempt_rows(tmp_path / "st") == [(0, 1, 0, "pass", None), (1, 1, 0, "pass", None)]
    assert len(requests) == 6
    asked = requests[4]["body"]
    assert "tools" not in asked and "Summarise the conversation" in json.dumps(asked["messages"][-1])
    after = [json.dumps(m) for m in requests[5]["body"]["messages"]]
    assert sum("SUMMARY-OF-EARLIER" in t for t in after) == 1
    assert "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in after[0] and "initial_specification.md" in after[1]
    assert any("make the following changes" in t for t in after)  # the current prompt stays
    first_write = script[0].tool_calls[0]["arguments"]["command"]  # turn 0's files, base64: gone after compaction
    assert first_write in json.dumps(requests[3]["body"]) and first_write not in json.dumps(requests[5]["body"])
    with contextlib.closing(sqlite3.connect(tmp_path / "st" / "staminad.db")) as db:
        assert db.execute("SELECT COUNT(*) FROM llm_calls").fetchone() == (6,)  # the summary is metered too
        # ... and recorded as the attempt's compaction, from a header the gateway keeps to itself
        assert db.execute("SELECT turn, compaction FROM llm_calls WHERE compaction = 1").fetchall() == [(1, 1)]
    assert all("x-staminabench-compaction" not in {k.lower() for k in r["headers"]} for r in requests)
