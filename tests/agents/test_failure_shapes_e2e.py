"""End to end: what real models do to harnesses, from the stand-in, against each harness run here, classified.

The provider failures are the same for every harness and must land on the right side whatever the harness
makes of them: a context-length refusal (HTTP 400 in the provider's words) ends the scenario
`context_exhausted` (the agent's long-horizon failure, scored), a provider error inside a 200 stream is
`llm_unavailable` (the platform's, never scored). The reply shapes a harness must survive (reasoning before the
answer, tool-call arguments over many small deltas, prompt-cache hits, truncated arguments, a `length` finish)
are run on mini-swe-agent, whose driver is ours: it passes, and the cache tokens are metered.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from tests.agents.test_mini_e2e import _script as mini_script
from tests.helpers.e2e import CODEX_MODEL, PARAMS, attempt_rows, run_sweep, scenario_end, write_sweep
from tests.helpers.standin import Fault, Reply, StandIn

pytestmark = [pytest.mark.docker, pytest.mark.e2e, pytest.mark.sweep]

# The harnesses whose layers build offline here (OpenHands has its own tests), and the model name each is run on.
EXECUTED = {
    "mini-swe-agent": "standin-1",
    "claude-code": "standin-1",
    "codex": CODEX_MODEL,
    "kimi-cli": "standin-1",
    "mistral-vibe": "standin-1",
}
VERDICTS = {"context": "context_exhausted", "stream_error": "llm_unavailable"}


def _layer(name: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    from staminad.sandbox.image import build_harness

    tag, _ = build_harness(name, tmp_path_factory.mktemp("layer"))
    return tag


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("fault", sorted(VERDICTS))
@pytest.mark.parametrize("name", sorted(EXECUTED))
def test_provider_failures_are_classified_for_every_harness(
    name: str, fault: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The model's first answer is the failure: the attempt's kind is the provider's (context_exhausted,
    scored with the turns passed; llm_unavailable, an infra failure), never a harness crash."""
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
    """Reasoning, arguments in 9-character deltas and a cache hit; then truncated arguments and a reply cut at
    its length, which the agent is told about and gets past: both turns pass, no infra retry, cache metered."""
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
