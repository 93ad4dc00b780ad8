"""`staminad status` says how many scenarios its figures count and how many it left out as unscored."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import SweepInfo
from protocol.messages import ConfigStatus
from staminad.commands.daemon import info_lines
from staminad.daemon.views import sweep_info
from tests.helpers.inprocess import events, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep

pytestmark = pytest.mark.sweep


def _config(name: str, scenarios: int, unscored: int) -> ConfigStatus:
    return ConfigStatus(
        name=name,
        scenarios=scenarios,
        finished=scenarios,
        mean_turns=4.0,
        se_turns=0.5,
        pass_rate=0.25,
        statuses={"failed": scenarios - unscored, "infra_failed": unscored},
        infra={"stuck": unscored},
        unscored=unscored,
    )


def test_status_names_counted_and_unscored_scenarios_and_shows_a_dash_when_none_count() -> None:
    """Each configuration line carries its denominators; one whose scenarios are all unscored shows '-'."""
    info = SweepInfo(
        sweep="w", status="finished", fingerprint="f", configurations=(_config("ref", 4, 1), _config("broken", 2, 2))
    )
    head, ref, broken = info_lines(info)
    assert head == "sweep w: finished"
    assert "4.0 +- 0.5 turns, pass rate 25% over 3 counted, 1 unscored" in ref
    assert "- turns, pass rate - over 0 counted, 2 unscored" in broken and "4.0" not in broken


def test_a_failed_sweep_says_why_on_its_line() -> None:
    """A sweep in `error` carries its one-line reason on the sweep line; the reason is made one bounded line."""
    from staminad.daemon.service import REASON_LIMIT, failure_reason

    info = SweepInfo(sweep="w", status="error", fingerprint="f", reason="SweepError: no such image")
    assert info_lines(info) == ["sweep w: error: SweepError: no such image"]
    assert failure_reason(ValueError("first\n  second")) == "ValueError: first second"
    assert len(failure_reason(RuntimeError("x" * 5000))) == REASON_LIMIT


def test_a_failed_sweeps_reason_is_each_cause_inside_a_task_groups_wrapper() -> None:
    """The reason names the leaves of (nested) exception groups as `run` prints them, a bounded number of them."""
    from staminad.daemon.service import REASON_CAUSES, failure_reason

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
async def test_a_daemon_sweep_that_fails_in_its_task_group_stores_the_cause(tmp_path: Path) -> None:
    """A sandbox dir that is a file fails the sweep; `status` then shows the OS error, not the group's wrapper."""
    state = tmp_path / "st"
    path = write_sweep(tmp_path, "bad", ["reference"], turns=1)
    (state / "sandboxes").mkdir(parents=True)
    (state / "sandboxes" / "bad").write_text("not a directory")
    async with running_daemon(state) as daemon, events(state, sweeps=("bad",)) as stream:
        await submit(state, path)
        failed = await until(stream, "sweep_error")
        assert daemon.store is not None
        info = await sweep_info(daemon.store, "bad")
    assert info.reason == failed.data.error  # type: ignore[union-attr]
    assert info.reason.startswith("Not a directory (") and "workspace" in info.reason, info.reason
    assert "ExceptionGroup" not in info.reason and "TaskGroup" not in info.reason
