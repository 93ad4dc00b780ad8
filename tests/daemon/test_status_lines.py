"""`staminad status` says how many scenarios its figures count and how many it left out as unscored."""

from __future__ import annotations

from protocol import SweepInfo
from protocol.messages import ConfigStatus
from staminad.commands.daemon import info_lines


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
