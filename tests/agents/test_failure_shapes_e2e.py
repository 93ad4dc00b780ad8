"""End to end: what real models do to harnesses, from the stand-in, against each harness run here, classified.

The provider failures are the same for every harness and must land on the right side whatever the harness
makes of them: a context-length refusal (HTTP 400 in the provider's words) ends the scenario
`context_exhausted` (the agent's long-horizon failure, scored), a provider error inside a 200 stream is
`llm_unavailable` (the platform's, never scored). The reply shapes a harness must survive (reasoning before the
answer, tool-call arguments over many small deltas, prompt-cache hits, truncated arguments, a `length` finish)
are run on every harness in the well-formed case (turn 0 passes, the cache hit is metered), and the malformed
ones (truncated arguments, a reply cut at its length) on mini-swe-agent, whose driver is ours: it gets past them.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from staminad.agents.harnesses import HARNESSES
from staminad.bench.readme import render_readme
from staminad.bench.scenario import ScenarioParams, generate
from staminad.bench.texts import initial_prompt, render_spec
from staminad.reference import agent as reference_agent
from tests.helpers.e2e import CODEX_MODEL, PARAMS, attempt_rows, rewrite_files, run_sweep, scenario_end, write_sweep
from tests.helpers.scripts import mini_script
from tests.helpers.standin import Fault, Reply, StandIn

pytestmark = [pytest.mark.docker, pytest.mark.e2e, pytest.mark.sweep]

# The harnesses run here: every one whose shell tool is pinned (`Harness.shell`; OpenHands has its own tests),
# each on the stand-in's model name unless it needs a model it knows.
MODELS = {"codex": CODEX_MODEL}
EXECUTED = {name: MODELS.get(name, "standin-1") for name, h in HARNESSES.items() if h.shell is not None}
VERDICTS = {"context": "context_exhausted", "stream_error": "llm_unavailable"}
# Each harness's shell tool and the name of its command argument.
SHELL = {name: h.shell for name, h in HARNESSES.items() if h.shell is not None}
TURN0 = ScenarioParams(turns=0, changes_per_turn=2)


def _layer(name: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    from staminad.agents.layers import layer_spec
    from staminad.sandbox.docker.image import build_harness

    tag, _ = build_harness(layer_spec(name), tmp_path_factory.mktemp("layer"))
    return tag


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("fault", sorted(VERDICTS))
@pytest.mark.parametrize("name", sorted(EXECUTED))
def test_provider_failures_are_classified_for_every_harness(
    name: str, fault: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A provider failure as the first answer keeps the provider's kind for every harness, never a crash."""
    image = _layer(name, tmp_path_factory)
    with StandIn(model=EXECUTED[name]) as standin:
        # Every call meets it: a harness that compacts or retries on its own meets it again and gives up.
        standin.faults.extend([Fault(fault)] * 20)
        sweep = write_sweep(
            tmp_path, "shapes", [name], standin.url, EXECUTED[name], PARAMS, retries=0, image=image, infra_retries=0
        )
        done = run_sweep(sweep, tmp_path / "st")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = attempt_rows(tmp_path / "st")
    assert rows == [(0, 1, 0, "infra", VERDICTS[fault])], rows
    status, passed, reason = scenario_end(tmp_path / "st")
    assert (status, passed) == ("infra_failed", 0), (status, passed, reason)


@pytest.mark.timeout(900)
def test_mini_swe_agent_survives_the_shapes_real_models_send(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """mini-swe-agent passes reasoning, tiny deltas, truncated arguments and a length cut; cache metered."""
    image = _layer("mini-swe-agent", tmp_path_factory)
    script = mini_script(tmp_path)
    write, submit = script[0], script[1]
    shapes = [
        Reply(reasoning="The spec is in initial_specification.md.", fragment=9, cached=64, tool_calls=write.tool_calls),
        Reply(tool_calls=[{"name": "bash", "raw": '{"command": "ls -'}]),  # arguments cut short
        Reply(content="I will now submit the", finish="length"),  # cut at max tokens, no tool call
        submit,
    ]
    with StandIn([*shapes, *script[2:]]) as standin:
        sweep = write_sweep(
            tmp_path, "shapes", ["mini-swe-agent"], standin.url, "standin-1", PARAMS, retries=0, image=image
        )
        done = run_sweep(sweep, tmp_path / "st")
        requests = list(standin.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    assert attempt_rows(tmp_path / "st") == [(0, 1, 0, "pass", None), (1, 1, 0, "pass", None)]
    assert len(requests) == 6
    with contextlib.closing(sqlite3.connect(tmp_path / "st" / "staminad.db")) as db:
        assert db.execute("SELECT COUNT(*) FROM llm_calls").fetchone() == (6,)
        assert db.execute("SELECT cached_tokens FROM llm_calls ORDER BY id LIMIT 1").fetchone()[0] > 0


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(EXECUTED))
def test_every_harness_passes_turn_0_through_reasoning_fragments_and_a_cache_hit(
    name: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every harness passes turn 0 through reasoning, small argument deltas and a metered prompt-cache hit."""
    image = _layer(name, tmp_path_factory)
    work = tmp_path / "scripted"
    work.mkdir()
    scenario = generate(0, TURN0)
    (work / "README.md").write_text(render_readme("python"))
    (work / "initial_specification.md").write_text(render_spec(scenario.initial))
    reference_agent.run(work, initial_prompt("python"), None, False)
    tool, argument = SHELL[name]
    write = {"name": tool, "arguments": {argument: rewrite_files(work)}}
    if name == "mini-swe-agent":  # mini ends a task by submitting, with its bash tool
        done = Reply(
            tool_calls=[{"name": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}]
        )
    else:
        done = Reply(reasoning="The files are written.", content="The server is written.", fragment=5)
    script = [
        Reply(reasoning="I will write the server from the spec.", fragment=7, cached=64, tool_calls=[write]),
        done,
    ]
    with StandIn(script, model=EXECUTED[name]) as standin:
        sweep = write_sweep(tmp_path, "shapes", [name], standin.url, EXECUTED[name], TURN0, retries=0, image=image)
        finished = run_sweep(sweep, tmp_path / "st")
        requests = list(standin.requests)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert attempt_rows(tmp_path / "st") == [(0, 1, 0, "pass", None)]
    assert len([r for r in requests if not r["path"].endswith("count_tokens")]) >= 2
    with contextlib.closing(sqlite3.connect(tmp_path / "st" / "staminad.db")) as db:
        assert db.execute("SELECT MAX(cached_tokens) FROM llm_calls").fetchone()[0] > 0


# What a harness makes of a truncated tool call followed by a reply cut at its length (found by running them):
# it gets past both and passes, except where this says otherwise.
PASSES = [(0, 1, 0, "pass", None)]
MALFORMED = {
    # A response cut at max_output_tokens ends codex's turn: "Incomplete response returned", exit 1, a harness
    # crash (the harness's infra retry, never the platform's); the retry, on the files already written, passes.
    "codex": [(0, 1, 0, "infra", "harness_crash"), (0, 1, 1, "pass", None)],
}


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(EXECUTED))
def test_a_truncated_tool_call_and_a_length_cut_are_the_agent_s_not_the_platform_s(
    name: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A truncated tool call and a length cut are never the platform's failure; each harness's verdict is pinned."""
    image = _layer(name, tmp_path_factory)
    work = tmp_path / "scripted"
    work.mkdir()
    scenario = generate(0, TURN0)
    (work / "README.md").write_text(render_readme("python"))
    (work / "initial_specification.md").write_text(render_spec(scenario.initial))
    reference_agent.run(work, initial_prompt("python"), None, False)
    tool, argument = SHELL[name]
    script = [
        Reply(tool_calls=[{"name": tool, "raw": f'{{"{argument}": "ls -'}]),
        Reply(tool_calls=[{"name": tool, "arguments": {argument: rewrite_files(work)}}]),
    ]
    if name == "mini-swe-agent":
        script += [
            Reply(content="I will now submit the", finish="length"),
            Reply(
                tool_calls=[{"name": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}]
            ),
        ]
    else:
        script.append(Reply(content="The server is written and", finish="length"))
    with StandIn(script, model=EXECUTED[name]) as standin:
        sweep = write_sweep(
            tmp_path, "shapes", [name], standin.url, EXECUTED[name], TURN0, retries=0, image=image, infra_retries=1
        )
        finished = run_sweep(sweep, tmp_path / "st")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    rows = attempt_rows(tmp_path / "st")
    assert not any(kind in ("llm_unavailable", "context_exhausted") for *_, kind in rows), rows
    assert rows == MALFORMED.get(name, PASSES), rows
