"""A sweep's summary per configuration: its figures as the socket sends them, and the end-of-run table.

Every figure is counted by the one rule every view counts by (`staminad.engine.score`).
"""

from __future__ import annotations

import sqlite3

from protocol.events import FINAL
from protocol.messages import ConfigStatus
from staminad.engine.score import config_tally, counts_text, score_text, standing, tally, unrecorded
from state.figures import sweep_figures
from state.money import CallMoney
from state.store import Store

# One shape for a configuration's figures: what the engine summarises is what the socket sends.
ConfigSummary = ConfigStatus


async def summarize(store: Store, sweep_id: str) -> list[ConfigSummary]:
    """Per configuration: turns passed over the scored scenarios, by the one rule every view counts by
    (`staminad.engine.score`): unfinished, never-run and unscored scenarios are counted apart, never averaged.
    Read in one hop off the event loop (`Store.read`), from rows per scenario, not per attempt."""
    return await store.read(summarize_in, sweep_id)


def summarize_in(conn: sqlite3.Connection, sweep_id: str) -> list[ConfigSummary]:
    figures = sweep_figures(conn, sweep_id)
    out = []
    for name in dict.fromkeys([*figures.models, *(r.configuration for r in figures.scenarios)]):
        mine = [r for r in figures.scenarios if r.configuration == name]
        rows = ((standing(r.status, r.end_kind, r.tested, r.started), r.turns_passed, r.status == "done") for r in mine)
        missing = unrecorded(figures.planned, len(mine))
        t = tally(rows, missing)
        money = figures.usage.get(name, CallMoney())
        statuses: dict[str, int] = {}
        for r in mine:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        if missing:  # not recorded yet: pending, as a recorded scenario that has not started
            statuses["pending"] = statuses.get("pending", 0) + missing
        out.append(
            ConfigSummary(
                name=name,
                scenarios=len(mine) + missing,
                finished=sum(r.status in FINAL for r in mine),
                mean_turns=t.mean or 0.0,
                se_turns=t.se or 0.0,
                pass_rate=t.pass_rate or 0.0,
                statuses=statuses,
                infra={k: v for (n, k), v in figures.infra.items() if n == name},
                cost=money.cost,
                tokens=money.tokens,
                calls=money.calls,
                estimated_calls=money.estimated,
                unpriced_calls=money.unpriced,
                unscored=t.unscored,
                scored=t.scored,
                unfinished=t.unfinished,
                never_run=t.never_run,
                model=figures.models.get(name, ""),
            )
        )
    return out


def format_summary(summaries: list[ConfigSummary]) -> str:
    """The end-of-run table: each configuration's score over its scored scenarios (`-` with none), and where
    the rest stand, by the one rule every view counts by (`staminad.engine.score`)."""
    width = max([len(s.name) for s in summaries] + [13])
    metered = any(s.tokens for s in summaries)
    lines = [
        f"{'configuration':<{width}}  {'turns passed (pass rate)':<24}  scenarios (status)            infra failures"
        + ("   tokens      cost" if metered else "")
    ]
    for s in summaries:
        t = config_tally(s)
        status = ", ".join(f"{k} {v}" for k, v in sorted(s.statuses.items())) + f"; {counts_text(t)}"
        infra = ", ".join(f"{k} {v}" for k, v in sorted(s.infra.items())) or "-"
        line = (
            f"{s.name:<{width}}  {score_text(t, '+-'):<24}  "
            f"{s.scenarios:3} ({status}){'':<{max(0, 26 - len(status))}}  {infra}"
        )
        if metered:
            line += f"{'':<{max(0, 16 - len(infra))}} {s.tokens:>9,} {s.cost_text:>9}"
        lines.append(line)
    return "\n".join(lines)


__all__ = ["ConfigSummary", "format_summary", "summarize", "summarize_in"]
