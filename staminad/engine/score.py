"""What counts: the one rule for which scenarios a configuration's score is over, and that score.

Every view that shows a number (`staminad status`, the TUI through the daemon's summary, the viewer, `report`,
`export`) asks `standing` where each scenario stands and `tally` for the figures, so they all agree:

- `scored`: it ended (done, failed, capped, or its harness out of infra retries) and says something about its
  agent (an attempt the suite tested, or a harness out of infra retries, scored with the turns passed so far, 0
  included, as in the paper);
- `unfinished`: it started and has not ended (running, or stopped by a cancel): its turns so far are no score;
- `never_run`: it never started (pending, or cancelled before it began);
- `unscored`: it ended without saying anything about its agent (a platform fault, or nothing ever tested).

Only `scored` ones enter a mean, an SE or a pass rate; the others are counted apart and shown as such, and a
configuration with none scored shows `-`, never `0.0 ± 0.0`.

Turns: a sweep's `turns = N` runs turn 0 (the initial implementation) and then N change requests, turns 0..N;
"turns passed" counts turn 0 too, so a scenario that passes everything scores N+1 (`best_score`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Literal

import msgspec

from protocol.events import FINAL
from protocol.messages import ConfigStatus
from staminad.engine.outcome import platform_ended

Standing = Literal["scored", "unfinished", "never_run", "unscored"]
STANDINGS: tuple[Standing, ...] = ("scored", "unfinished", "never_run", "unscored")


def best_score(n_turns: int) -> int:
    """The most turns a scenario of a sweep with `turns = n_turns` can pass: turn 0 and N change requests."""
    return n_turns + 1


def turns_words(n_turns: int) -> str:
    """How every view names a sweep's length: `turns = 8: turn 0 + 8 changes (best score 9)`."""
    return f"turns = {n_turns}: turn 0 + {n_turns} changes (best score {best_score(n_turns)})"


def standing(status: str, end_kind: str | None, tested: bool, started: bool = False) -> Standing:
    """Where a scenario stands for scoring. `end_kind` is its last attempt's infra kind (None if none);
    `tested` whether the suite tested any of its attempts (pass or fail); `started` whether it has any attempt.
    A `pending` scenario that got somewhere (a cancel or a stop puts running ones back to pending) is unfinished."""
    if status not in FINAL:
        return "never_run" if status == "pending" and not (tested or started) else "unfinished"
    if platform_ended(status, end_kind):
        return "unscored"
    return "scored" if tested or status == "infra_failed" else "unscored"


class Tally(msgspec.Struct, frozen=True, kw_only=True):
    """A configuration's figures over its scored scenarios, and how many scenarios stand elsewhere."""

    scored: int = 0
    mean: float | None = None  # None when nothing is scored
    se: float | None = None
    pass_rate: float | None = None
    unfinished: int = 0
    never_run: int = 0
    unscored: int = 0

    @property
    def total(self) -> int:
        return self.scored + self.unfinished + self.never_run + self.unscored

    @property
    def final(self) -> bool:
        """Whether every scenario has ended: until then the figures are not final."""
        return not self.unfinished and not self.never_run


def unrecorded(planned: int | None, recorded: int) -> int:
    """Scenarios of a configuration not recorded yet: a sweep lays them out lazily (`engine.expand`), and they
    are never run until they are. `planned` is the sweep's scenarios per configuration (None: not known)."""
    return max(0, planned - recorded) if planned else 0


def tally(rows: Iterable[tuple[Standing, int, bool]], unrecorded: int = 0) -> Tally:
    """Figures over `(standing, turns_passed, passed_every_turn)` rows: mean ± SE and pass rate of the scored;
    `unrecorded` scenarios (see `unrecorded`) count as never run."""
    counts = dict.fromkeys(STANDINGS, 0)
    counts["never_run"] += unrecorded
    turns: list[int] = []
    full = 0
    for where, passed, complete in rows:
        counts[where] += 1
        if where == "scored":
            turns.append(passed)
            full += complete
    if not turns:
        return Tally(unfinished=counts["unfinished"], never_run=counts["never_run"], unscored=counts["unscored"])
    se = statistics.stdev(turns) / math.sqrt(len(turns)) if len(turns) > 1 else 0.0
    return Tally(
        scored=len(turns),
        mean=statistics.fmean(turns),
        se=se,
        pass_rate=full / len(turns),
        unfinished=counts["unfinished"],
        never_run=counts["never_run"],
        unscored=counts["unscored"],
    )


def config_tally(s: ConfigStatus) -> Tally:
    """The daemon's summary of a configuration (`ConfigStatus`) as a `Tally`, for the views that format it."""
    return Tally(
        scored=s.scored,
        mean=s.mean_turns if s.scored else None,
        se=s.se_turns if s.scored else None,
        pass_rate=s.pass_rate if s.scored else None,
        unfinished=s.unfinished,
        never_run=s.never_run,
        unscored=s.unscored,
    )


def counts_text(t: Tally) -> str:
    """The denominators, as every view words them: `n=3; 2 unfinished, 4 never run, 1 unscored`."""
    rest = [
        f"{n} {word}"
        for n, word in ((t.unfinished, "unfinished"), (t.never_run, "never run"), (t.unscored, "unscored"))
        if n
    ]
    return f"n={t.scored}" + (f"; {', '.join(rest)}" if rest else "")


def score_text(t: Tally, pm: str = "±") -> str:
    """`5.5 ± 0.5 (50%)` over the scored scenarios, or `-` when none is scored (never zeros)."""
    if t.mean is None or t.se is None or t.pass_rate is None:
        return "-"
    return f"{t.mean:.1f} {pm} {t.se:.1f} ({t.pass_rate:.0%})"


LIVE = ("running", "paused")  # sweep statuses under which scenarios may still run


def not_final(t: Tally, sweep_status: str | None = None) -> str:
    """What every view says beside figures that are not the sweep's final ones ("" when they are).

    `sweep_status` None means unknown (treated as still running)."""
    if t.final:
        return ""
    left = ", ".join(f"{n} {word}" for n, word in ((t.unfinished, "unfinished"), (t.never_run, "never run")) if n)
    if sweep_status is None or sweep_status in LIVE:
        how = "paused" if sweep_status == "paused" else "still running"
        return f"not final: the sweep is {how} ({left}); these numbers will change"
    return f"incomplete: the sweep is {sweep_status} with {left}; these numbers leave them out"


__all__ = [
    "LIVE",
    "STANDINGS",
    "Standing",
    "Tally",
    "best_score",
    "config_tally",
    "counts_text",
    "not_final",
    "score_text",
    "standing",
    "tally",
    "turns_words",
    "unrecorded",
]
