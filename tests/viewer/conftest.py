"""Viewer fixtures: a store from a real small sweep, plus a scenario whose agent wrote `<script>` everywhere."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from staminad.sandbox.codekeep import keep_from_dir
from state import Store
from state.store import HarnessEnd, Verdict
from tests.helpers.sweeps import sweep, write_sweep
from tests.helpers.viewer import SCRIPT, XSS_CONFIG, XSS_SWEEP


async def _agent_wrote_scripts(state: Path) -> None:
    """A scenario as the engine records it, where the agent's server, harness and prompt texts carry markup."""
    root = state / "sandboxes" / "xss" / "c1-s0"
    (root / "control" / "jobs" / "t0000-a01-i00").mkdir(parents=True)
    (root / "control" / "jobs" / "t0000-a01-i00" / "log").write_text(f"harness says {SCRIPT}\n")
    (root / "control" / "server.log").write_text(f"a later start {SCRIPT}\n" + "x" * 200_000 + "\nlast line\n")
    (root / "workspace").mkdir()
    (root / "workspace" / "index<b>.html").write_text(f"<p>code says {SCRIPT}</p>\n")
    keep_from_dir(root / "workspace", root, "t0000-a01-i00")  # as the engine keeps a tested attempt's code
    async with await Store.open(state / "staminad.db") as store:
        await store.ensure_sweep(XSS_SWEEP, XSS_SWEEP, "fp", "{}")
        await store.set_sweep_turns(XSS_SWEEP, 1)
        cid = await store.ensure_configuration(XSS_SWEEP, XSS_CONFIG, "agent<script>x</script>", 1, "detailed")
        sc = await store.ensure_scenario(cid, 0)
        await store.set_sandbox(sc.id, {"runtime": "local", "root": str(root)})
        await store.set_scenario_status(sc.id, "failed", reason=f"turn 0 failed {SCRIPT}")
        row = await store.begin_attempt(sc.id, 0, 1, 0, "turn", f"prompt {SCRIPT}")
        results = [
            {"name": "t_ok", "category": "crud", "rule": "r", "passed": True},
            {
                "name": f"t{SCRIPT}",
                "category": "business_logic",
                "rule": "r1",
                "passed": False,
                "message": f"wrong {SCRIPT}",
                "request": f"POST /things {SCRIPT}",
                "status": 500,
                "response": f"<html>{SCRIPT}</html>",
            },
        ]
        await store.harness_done(row.id, HarnessEnd(harness_exit=0, harness_seconds=1.5, loc=12))
        await store.tested(
            row.id,
            Verdict(
                results=results,
                outcome="fail",
                categories=("business_logic",),
                passed_tests=1,
                total_tests=2,
                feedback=f"feedback {SCRIPT}",
                server_seconds=0.2,
                suite_seconds=0.3,
                teardown_seconds=0.01,
                server_log=f"server says {SCRIPT}\n",
            ),
        )
        await store.llm_call(sc.id, row.id, 0, "openai", "m", (100, 20, 5), 0.0125, 200, 1.0, 0.0, False)


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """State dir with sweep `vw` (reference, a caught mutant, a transient crash) and sweep `infra` (only
    infrastructure failures), both run for real with local processes, and the `xss<b>` sweep."""
    tmp = tmp_path_factory.mktemp("viewer")
    state = tmp / "state"
    vw = write_sweep(
        tmp, "vw", ["reference", "mutant:500-on-wrong-type", "fault:crash:once"], seeds="0-1", turns=3, retries=1
    )
    infra = write_sweep(tmp, "infra", ["fault:crash"], seeds="0-1", turns=2, retries=1)
    anyio.run(sweep, vw, state)
    anyio.run(sweep, infra, state)
    anyio.run(_agent_wrote_scripts, state)
    return state
