"""What each viewer page shows, read from the store: sweeps, a sweep, a scenario, a comparison; the rows a page
lists are typed (`rows`).

Pure functions over a read-only sqlite3 connection, shared by the live server (`app`) and the static site
(`site`), so both show the same numbers. Where a scenario stands (its P/R/F/I history) comes from
`engine.standing.scenario_row`, the one definition the TUI also shows; which scenarios a figure is over, and the
figures, from `staminad.engine.score`, the rule `status`, the TUI and `report` count by.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import msgspec

from protocol.events import FINAL
from protocol.kinds import ScenarioStatus, SweepStatus
from protocol.messages import CodeChange
from staminad.analysis.codediff import AttemptRef, code_change
from staminad.analysis.stats import kaplan_meier, mean_se, wilcoxon_paired
from staminad.engine.score import (
    Standing,
    best_score,
    counts_text,
    not_final,
    standing,
    tally,
    turns_words,
    unrecorded,
)
from staminad.engine.standing import scenario_row
from staminad.sandbox.bounded import bounded_tail
from staminad.sandbox.codekeep import KeptCode
from staminad.viewer.rows import ConfigSummary, Curve, GridRow, Pair, SweepLine
from state import browse
from state.money import CallMoney, total
from state.scenarios import StoredScenario
from state.store import Progress

PROMPT_LIMIT = 200_000  # characters of a prompt or feedback shown; the rest is cut with a note
LOG_LIMIT = 64 * 1024  # bytes of a log's tail shown
CODE_LIMIT = 100_000  # characters of an attempt's code diff shown (every attempt's is on the page)


class NotFound(Exception):
    """A page for a sweep, configuration or scenario the store does not have."""


def when(ts: float | None) -> str:
    return "" if ts is None else dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def clip(text: str | None, limit: int = PROMPT_LIMIT) -> tuple[str, bool]:
    """`text` cut to `limit` characters, and whether it was cut."""
    text = text or ""
    return (text[:limit], True) if len(text) > limit else (text, False)


def job_id(turn: int, attempt: int, infra_try: int) -> str:
    """The harness job's directory name (as the engine names it), where its log lives."""
    return f"t{turn:04d}-a{attempt:02d}-i{infra_try:02d}"


def _decode_sandbox(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def sweeps_page(conn: sqlite3.Connection) -> dict[str, Any]:
    version = browse.schema_version(conn)
    lines = []
    for r in browse.sweeps(conn):
        sw = r.sweep
        where = _standings(conn, sw.id)
        headline = [
            _config_summary(c, ss, sw.turns or 0, {}, where, sw.status, sw.planned) for c, ss in _by_config(conn, sw.id)
        ]
        lines.append(
            SweepLine(
                id=sw.id,
                name=sw.name,
                status=sw.status,
                turns=sw.turns,
                scenarios=sum(c.scenarios for c in headline),  # the recorded ones and those not yet laid out
                finished=sum(n for s, n in r.statuses.items() if s in FINAL),
                attempts=r.attempts,
                created=when(sw.created_at),
                headline=headline,
            )
        )
    return {"sweeps": lines, "version": version, "latest": browse.LATEST}


def _by_config(
    conn: sqlite3.Connection, sweep_id: str
) -> list[tuple[browse.ConfigurationRecord, list[browse.ScenarioRecord]]]:
    scen = browse.scenarios(conn, sweep_id)
    return [(c, [s for s in scen if s.config_id == c.id]) for c in browse.configurations(conn, sweep_id)]


def _standings(conn: sqlite3.Connection, sweep_id: str) -> dict[int, Standing]:
    """Where each scenario of the sweep stands for scoring (`staminad.engine.score.standing`), by scenario id."""
    last_kind: dict[int, str | None] = {}
    tested: set[int] = set()
    for p in browse.progress(conn, sweep_id):  # in attempt order: the last one's kind is kept
        last_kind[p.scenario_id] = p.infra_kind
        if p.outcome in ("pass", "fail"):
            tested.add(p.scenario_id)
    return {
        s.id: standing(s.status, last_kind.get(s.id), s.id in tested, s.id in last_kind)
        for s in browse.scenarios(conn, sweep_id)
    }


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _config_summary(
    c: browse.ConfigurationRecord,
    scen: list[browse.ScenarioRecord],
    n_turns: int,
    usage: dict[int, CallMoney],
    where: dict[int, Standing],
    sweep_status: SweepStatus,
    planned: int | None = None,
) -> ConfigSummary:
    missing = unrecorded(planned, len(scen))  # laid out lazily: not recorded yet, never run
    t = tally(((where[s.id], s.turns_passed, s.status == "done") for s in scen), missing)
    statuses: dict[ScenarioStatus, int] = {"pending": missing} if missing else {}
    for s in scen:
        statuses[s.status] = statuses.get(s.status, 0) + 1
    money = total(usage[s.id] for s in scen if s.id in usage)
    return ConfigSummary(
        name=c.name,
        agent=c.agent,
        model=c.model,
        retries=c.retries,
        feedback=c.feedback,
        scenarios=len(scen) + missing,
        finished=sum(s.status in FINAL for s in scen),
        mean=t.mean,
        se=t.se,
        pass_rate=t.pass_rate,
        scored=t.scored,
        unscored=t.unscored,
        unfinished=t.unfinished,
        never_run=t.never_run,
        counts=counts_text(t),
        not_final=not_final(t, sweep_status),
        statuses=statuses,
        cost=money.text() if money.calls else None,
        tokens=money.tokens or None,
        n_turns=n_turns,
    )


def sweep_page(conn: sqlite3.Connection, sweep_id: str) -> dict[str, Any]:
    browse.schema_version(conn)
    sw = browse.sweep(conn, sweep_id)
    if sw is None:
        raise NotFound(f"no sweep {sweep_id!r} in this store")
    n_turns = sw.turns or 0
    usage = browse.usage_by_scenario(conn, sweep_id)
    groups = _by_config(conn, sweep_id)
    progress: dict[int, list[Progress]] = {}
    for p in browse.progress(conn, sweep_id):
        progress.setdefault(p.scenario_id, []).append(p)
    configs: list[ConfigSummary] = []
    curves: list[Curve] = []
    grid: list[GridRow] = []
    where = _standings(conn, sweep_id)
    for c, scen in groups:
        configs.append(_config_summary(c, scen, n_turns, usage, where, sw.status, sw.planned))
        # The survival curve is over the scored scenarios, as the report's: a harness out of infra retries
        # is an event there (paper), an unfinished or never-run scenario is not in it.
        counted = [s for s in scen if where[s.id] == "scored"]
        durations = [float(s.turns_passed) for s in counted]
        observed = [s.status in ("failed", "infra_failed") for s in counted]
        km = kaplan_meier(durations, observed) if counted else None
        curves.append(
            Curve(
                name=c.name,
                tau=float(n_turns + 1),
                times=list(km.times) if km else [],
                survival=list(km.survival) if km else [],
                censored=[d for d, e in zip(durations, observed, strict=True) if not e],
            )
        )
        for s in scen:
            row = scenario_row(c.name, _stored(s), progress.get(s.id, []))
            cells = list(row.history)
            if row.status not in FINAL and len(cells) <= n_turns:
                cells.append("·" if row.status == "pending" else "…")  # the turn being worked on
            grid.append(
                GridRow(
                    configuration=c.name,
                    seed=s.seed,
                    status=row.status,
                    phase=row.phase,
                    turns_passed=row.turns_passed,
                    cells=cells + [""] * max(0, n_turns + 1 - len(cells)),
                    last_failure=row.last_failure,
                )
            )
    notes = [f"{c.name}: {c.not_final}" for c in configs if c.not_final]
    return {
        "sweep": sw,
        "sweep_id": sweep_id,
        "n_turns": n_turns,
        "turns_words": turns_words(n_turns),
        "not_final": notes,
        "all_infra": any(c.finished for c in configs)
        and all(c.statuses.get("infra_failed", 0) == c.finished for c in configs),
        "configs": configs,
        "curves": curves,
        "grid": grid,
        "turn_range": list(range(n_turns + 1)),
        "created": when(sw.created_at),
        "metered": any(c.tokens for c in configs),
    }


def _stored(s: browse.ScenarioRecord) -> StoredScenario:
    return StoredScenario(
        id=s.id,
        config_id=s.config_id,
        seed=s.seed,
        status=s.status,
        turns_passed=s.turns_passed,
        reason=s.reason,
        sandbox={},
        infra_grant=s.infra_grant,
    )


def scenario_page(conn: sqlite3.Connection, sweep_id: str, configuration: str, seed: int) -> dict[str, Any]:
    browse.schema_version(conn)
    sc = browse.scenario(conn, sweep_id, configuration, seed)
    if sc is None:
        raise NotFound(f"no scenario with seed {seed} in configuration {configuration!r} of sweep {sweep_id!r}")
    sandbox = _decode_sandbox(sc.sandbox)
    root = Path(sandbox["root"]) if isinstance(sandbox.get("root"), str) else None
    usage = browse.usage_by_attempt(conn, sc.id)
    attempts = []
    rows = browse.attempts(conn, sc.id)
    refs = [AttemptRef(a.id, a.turn, a.attempt, a.infra_try, a.phase, a.outcome) for a in rows]
    listings: dict[str, KeptCode | None] = {}  # each attempt's listing read once for the page
    for a in rows:
        prompt, prompt_cut = clip(a.prompt)
        feedback, feedback_cut = clip(a.feedback)
        failing = [t for t in a.tests if not t.get("passed")]
        job = job_id(a.turn, a.attempt, a.infra_try)
        log = bounded_tail(root / "control" / "jobs" / job / "log", LOG_LIMIT) if root else None
        attempts.append(
            {
                **msgspec.structs.asdict(a),
                "prompt": prompt,
                "prompt_cut": prompt_cut,
                "feedback": feedback,
                "feedback_cut": feedback_cut,
                "failing": failing,
                "job": job,
                "log": log,
                "launched": when(a.launched_at),
                "finished": when(a.finished_at),
                "usage": usage.get(a.id),
                "anchor": f"a{a.id}",
                "code": code_view(code_change(root, refs, a.id, CODE_LIMIT, listings)),
            }
        )
    sw = browse.sweep(conn, sweep_id)
    return {
        "sweep_id": sweep_id,
        "best_score": best_score(sw.turns or 0) if sw else None,
        "scenario": sc,
        "sandbox": sandbox,
        "attempts": attempts,
        "events": browse.infra_events(conn, sc.id),
        "updated": when(sc.updated_at),
        "cost": total(u.money for u in usage.values()).text() if usage else None,
    }


def code_view(change: CodeChange) -> dict[str, Any]:
    """An attempt's code change for the page: the change itself, and its diff as (kind, line) for colouring."""
    lines = []
    for line in change.diff.splitlines():
        kind = "hdr" if line.startswith(("---", "+++", "@@")) else {"+": "add", "-": "del"}.get(line[:1], "ctx")
        lines.append((kind, line))
    return {"change": change, "lines": lines}


def compare_page(conn: sqlite3.Connection, sweep_id: str, a: str | None, b: str | None) -> dict[str, Any]:
    """Configurations `a` and `b` on the scenarios both have: paired differences in turns passed, Wilcoxon p."""
    browse.schema_version(conn)
    if browse.sweep(conn, sweep_id) is None:
        raise NotFound(f"no sweep {sweep_id!r} in this store")
    names = [c.name for c in browse.configurations(conn, sweep_id)]
    out: dict[str, Any] = {"sweep_id": sweep_id, "names": names, "a": a, "b": b, "pairs": None}
    if a is None or b is None:
        return out
    for name in (a, b):
        if name not in names:
            raise NotFound(f"no configuration {name!r} in sweep {sweep_id!r}")
    scen = browse.scenarios(conn, sweep_id)
    sa = {s.seed: s for s in scen if s.configuration == a}
    sb = {s.seed: s for s in scen if s.configuration == b}
    seeds = sorted(set(sa) & set(sb))
    pairs = [
        Pair(
            seed=s,
            a=sa[s].turns_passed,
            b=sb[s].turns_passed,
            a_status=sa[s].status,
            b_status=sb[s].status,
            diff=sa[s].turns_passed - sb[s].turns_passed,
        )
        for s in seeds
    ]
    diffs = [float(p.diff) for p in pairs]
    mean, se = mean_se(diffs)
    out.update(
        pairs=pairs,
        mean_diff=_num(mean),
        se_diff=_num(se),
        p=wilcoxon_paired([p.a for p in pairs], [p.b for p in pairs]) if pairs else None,
        wins=sum(d > 0 for d in diffs),
        losses=sum(d < 0 for d in diffs),
        ties=sum(d == 0 for d in diffs),
        unfinished=sum(sa[s].status not in FINAL or sb[s].status not in FINAL for s in seeds),
    )
    return out
