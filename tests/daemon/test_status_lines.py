"""`staminad status` says how many scenarios its figures count and where the others stand, and that figures of a
sweep still running are not final."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import SweepInfo
from protocol.messages import ConfigStatus
from staminad.commands.clients import info_lines
from staminad.daemon.views import sweep_info
from tests.helpers.inprocess import events, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep

pytestmark = pytest.mark.sweep


def _config(name: str, scenarios: int, unscored: int, unfinished: int = 0) -> ConfigStatus:
    scored = scenarios - unscored - unfinished
    return ConfigStatus(
        name=name,
        scenarios=scenarios,
        finished=scenarios - unfinished,
        mean_turns=4.0 if scored else 0.0,
        se_turns=0.5 if scored else 0.0,
        pass_rate=0.25 if scored else 0.0,
        statuses={"failed": scored, "infra_failed": unscored, "running": unfinished},
        infra={"stuck": unscored},
        unscored=unscored,
        scored=scored,
        unfinished=unfinished,
    )


def test_status_names_counted_and_unscored_scenarios_and_shows_a_dash_when_none_count() -> None:
    """Each configuration line carries its denominators; one whose scenarios are all unscored shows '-'."""
    info = SweepInfo(
        sweep="w", status="finished", fingerprint="f", configurations=(_config("ref", 4, 1), _config("broken", 2, 2))
    )
    head, ref, broken = info_lines(info)
    assert head == "sweep w: finished"
    assert "turns passed 4.0 +- 0.5 (25%), n=3; 1 unscored" in ref and "not final" not in ref
    assert "turns passed -, n=0; 2 unscored" in broken and "4.0" not in broken


def test_status_of_a_running_sweep_says_its_figures_are_not_final() -> None:
    """Running scenarios are counted apart, never scored, and the line says the figures will change."""
    info = SweepInfo(sweep="w", status="running", fingerprint="f", configurations=(_config("ref", 4, 0, unfinished=2),))
    _, ref = info_lines(info)
    assert "turns passed 4.0 +- 0.5 (25%), n=2; 2 unfinished" in ref
    assert "[not final: the sweep is still running (2 unfinished); these numbers will change]" in ref


def test_a_failed_sweep_says_why_on_its_line() -> None:
    """A sweep in `error` carries its one-line reason on the sweep line; the reason is made one bounded line."""
    from staminad.daemon.running import REASON_LIMIT, failure_reason

    info = SweepInfo(sweep="w", status="error", fingerprint="f", reason="SweepError: no such image")
    assert info_lines(info) == ["sweep w: error: SweepError: no such image"]
    assert failure_reason(ValueError("first\n  second")) == "ValueError: first second"
    assert len(failure_reason(RuntimeError("x" * 5000))) == REASON_LIMIT


def test_a_failed_sweeps_reason_is_each_cause_inside_a_task_groups_wrapper() -> None:
    """The reason names the leaves of (nested) exception groups as `run` prints them, a bounded number of them."""
    from staminad.daemon.running import REASON_CAUSES, failure_reason

    missing = NotADirectoryError(20, "Not a directory", "/st/sandboxes/bad/c3-s0/workspace")
    assert failure_reason(ExceptionGroup("unhandled errors in a TaskGroup", [missing])) == (
        "Not a directory (/st/sandboxes/bad/c3-s0/workspace)"
    )
    nested = ExceptionGroup("outer", [ExceptionGroup("inner", [ValueError("a")]), KeyError("b")])
    assert failure_reason(nested) == "ValueError: a; KeyError: 'b'"
    many = ExceptionGroup("many", [ValueError(str(n)) for n in range(REASON_CAUSES + 3)])
    reason = failure_reason(many)
    assert reason.endswith("; and 3 more") and reason.count("ValueError") == REASON_CAUSES and "many" not in reason


@pytest.mark.anyio
async def test_a_sandbox_the_daemon_cannot_make_ends_its_scenario_with_the_cause(tmp_path: Path) -> None:
    """A sandbox dir that is a file ends that scenario (not the sweep or the daemon): its reason shows the OS error."""
    state = tmp_path / "st"
    path = write_sweep(tmp_path, "bad", ["reference"], turns=1)
    (state / "sandboxes").mkdir(parents=True)
    (state / "sandboxes" / "bad").write_text("not a directory")
    async with running_daemon(state) as daemon, events(state, sweeps=("bad",)) as stream:
        await submit(state, path)
        ended = await until(stream, "scenario_finished")
        await until(stream, "sweep_finished")
        assert daemon.store is not None
        info = await sweep_info(daemon.store, "bad")
    assert ended.data.status == "infra_failed"  # type: ignore[union-attr]
    reason = ended.data.reason  # type: ignore[union-attr]
    assert "internal_error" in reason and "Not a directory" in reason and "workspace" in reason, reason
    assert info.status != "error", info
    assert "ExceptionGroup" not in info.reason and "TaskGroup" not in info.reason
