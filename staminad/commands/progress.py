"""`staminad run`'s live progress log: one line per step that matters, naming configuration and seed.

Each line starts with the elapsed time and, once a scenario has ended, `k/N` scenarios ended and an ETA
(elapsed time over the scenarios ended in this run, times those left). Fed the engine's typed events.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from protocol.events import (
    AttemptTested,
    EventData,
    HarnessDone,
    InfraFailure,
    ManualPrompt,
    ScenarioFinished,
    SweepStarted,
)


def clock(seconds: float) -> str:
    """A duration as people read it: 42s, 3m05s, 1h02m."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    """Turns events into printed lines; `quiet` keeps only what needs a person (a manual prompt)."""

    def __init__(self, quiet: bool, out: Callable[[str], None], now: Callable[[], float] = time.monotonic) -> None:
        self.quiet, self.out, self.now = quiet, out, now
        self.start = now()
        self.total = 0
        self.ended_before = 0  # scenarios already ended when this run began (a resumed sweep)
        self.ended_now = 0
        self.manual: set[tuple[str, int]] = set()  # (configuration, seed) whose prompts a person answers

    def __call__(self, data: EventData) -> None:
        if isinstance(data, ManualPrompt):
            self.manual.add((data.configuration, data.seed))
        elif isinstance(data, HarnessDone) and (data.configuration, data.seed) in self.manual:
            # A person's `done`: the verdict takes a server start and a suite run, tens of seconds; say so.
            who = f"{data.configuration} seed {data.seed} turn {data.turn} attempt {data.attempt}"
            self.out(f"[{self.header()}] {who}: marked done; testing...")
            return
        if isinstance(data, ScenarioFinished):
            self.ended_now += 1
        elif isinstance(data, SweepStarted):
            self.total = data.scenarios * data.configurations
            self.ended_before = data.finished
        line = self.line(data)
        if line is not None and (not self.quiet or isinstance(data, ManualPrompt)):
            self.out(f"[{self.header()}] {line}")

    def header(self) -> str:
        elapsed = self.now() - self.start
        head = clock(elapsed)
        if self.total:
            ended = self.ended_before + self.ended_now
            head += f" {ended}/{self.total}"
            if self.ended_now and ended < self.total:
                head += f" ETA {clock(elapsed / self.ended_now * (self.total - ended))}"
        return head

    @staticmethod
    def line(data: EventData) -> str | None:
        match data:
            case AttemptTested():
                why = f" ({','.join(data.categories)})" if data.categories else ""
                verdict = "passed" if data.passed else f"failed {data.failed_tests}/{data.tests}{why}"
                return f"{data.configuration} seed {data.seed} turn {data.turn} attempt {data.attempt}: {verdict}"
            case InfraFailure():
                return (
                    f"{data.configuration} seed {data.seed} turn {data.turn} attempt {data.attempt}: INFRA "
                    f"{data.infra_kind} (try {data.infra_try})" + (f": {data.detail}" if data.detail else "")
                )
            case ScenarioFinished():
                return f"{data.configuration} seed {data.seed} {data.status}: {data.turns_passed} turns passed"
            case ManualPrompt():
                return (
                    f"{data.configuration} seed {data.seed}: your turn. Prompt: {data.prompt}; work in "
                    f"{data.workspace}; then run: {data.done}"
                )
            case SweepStarted():
                return (
                    f"sweep {data.sweep}: {data.configurations} configurations x {data.scenarios} scenarios"
                    f"{' (resumed)' if data.resumed else ''}"
                )
            case _:
                return None


__all__ = ["Progress", "clock"]
