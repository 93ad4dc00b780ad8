"""`staminad run`'s progress lines name configuration and seed and say k/N scenarios, elapsed time and ETA."""

from __future__ import annotations

from typing import TypedDict

from protocol.events import AttemptTested, ManualPrompt, ScenarioFinished, SweepStarted
from staminad.commands.progress import Progress, clock


class Who(TypedDict):
    """Which scenario an event is about."""

    scenario: int
    configuration: str
    seed: int


WHO: Who = {"scenario": 7, "configuration": "aider R=2 detailed", "seed": 3}


def test_lines_name_the_scenario_and_count_down_to_an_eta() -> None:
    """After one of four scenarios ends in 60 s (one was done before a resume), the ETA is 2 x 60 s."""
    lines: list[str] = []
    now = [100.0]
    progress = Progress(quiet=False, out=lines.append, now=lambda: now[0])
    progress(SweepStarted(sweep="w", resumed=True, scenarios=2, configurations=2, finished=1))
    now[0] = 130.0
    progress(
        AttemptTested(
            **WHO,
            turn=0,
            attempt=1,
            passed=False,
            failed_tests=2,
            tests=9,
            categories=("validation",),
            suite_seconds=0.1,
            server_seconds=0.1,
        )
    )
    now[0] = 160.0
    progress(ScenarioFinished(**WHO, status="failed", turns_passed=0, reason="turn 0 failed"))
    assert lines[0] == "[0s 1/4] sweep w: 2 configurations x 2 scenarios (resumed)"
    assert lines[1] == "[30s 1/4] aider R=2 detailed seed 3 turn 0 attempt 1: failed 2/9 (validation)"
    assert lines[2] == "[1m00s 2/4 ETA 2m00s] aider R=2 detailed seed 3 failed: 0 turns passed"


def test_quiet_keeps_only_what_needs_a_person() -> None:
    """With --quiet, a manual prompt is still printed and nothing else is."""
    lines: list[str] = []
    progress = Progress(quiet=True, out=lines.append, now=lambda: 0.0)
    progress(SweepStarted(sweep="w", resumed=False, scenarios=1, configurations=1))
    progress(ManualPrompt(**WHO, prompt="p.md", workspace="/ws", done="staminad done --marker m.json"))
    assert len(lines) == 1 and "aider R=2 detailed seed 3: your turn" in lines[0]
    assert (clock(42), clock(185), clock(3720)) == ("42s", "3m05s", "1h02m")
