"""Reports: the paper-style table with significance marks, survival and RMST, failure analysis, built as one
typed `reportdata.Report`, written as Markdown or CSV (`render`), LaTeX (`latex`) or JSON (`reportdata.to_json`);
figures are drawn by `figures.py` from the same report data.

Configurations are keyed by (sweep, configuration): when a report spans several sweeps, each row and
configuration is labelled `sweep/name`, so two sweeps' configurations of one name never merge.
Which scenarios a figure is over is `staminad.engine.score`'s rule, the one every view counts by: only
scenarios that ended and say something about their agent are scored; unfinished (running, or stopped by a
cancel), never-run and unscored ones (a platform fault, nothing tested) are left out of every figure and
counted apart. Every table says how many scenarios were scored and where the others stand, and a report
over a sweep that has not ended says, first, that its numbers are not final.
"""

from __future__ import annotations

import math
from typing import TypedDict

import msgspec

from staminad.analysis.cost import NO_USAGE, CostStudy
from staminad.analysis.data import ConfigData, ScenarioData
from staminad.analysis.grid import build_grid
from staminad.analysis.metrics import (
    agent_attempts,
    end_kind,
    failure_counts,
    loc_by_turn,
    regressions,
    retry_curve,
    summary,
    survival_data,
    views_differ,
)
from staminad.analysis.render import ALPHA, TABLE_RULE, csv_table, markdown
from staminad.analysis.reportdata import (
    Cell,
    ConfigRow,
    Counts,
    LogRank,
    Regressions,
    Report,
    SurvivalEntry,
    Table,
    Views,
    to_json,
)
from staminad.analysis.stats import holm, kaplan_meier, logrank, rmst_bootstrap, wilcoxon_paired
from staminad.engine.score import Standing, Tally, not_final, standing, tally, turns_words, unrecorded


def _column(c: ConfigData) -> str:
    return f"R={c.retries} {c.feedback}"


def _paired(a: ConfigData, b: ConfigData) -> tuple[list[float], list[float]]:
    sa, sb = a.by_seed(), b.by_seed()
    seeds = sorted(set(sa) & set(sb))
    return [sa[s].turns_passed for s in seeds], [sb[s].turns_passed for s in seeds]


def scored(s: ScenarioData) -> bool:
    """Whether a scenario is scored, by `staminad.engine.score.standing` (which every view counts by)."""
    return _standing(s) == "scored"


def _standing(s: ScenarioData) -> Standing:
    return standing(s.status, end_kind(s), bool(agent_attempts(s)), bool(s.attempts))


def tally_of(c: ConfigData) -> Tally:
    """The configuration's figures and denominators by the shared rule (`staminad.engine.score.tally`)."""
    missing = unrecorded(c.planned, len(c.scenarios))  # laid out lazily, not recorded yet: never run
    return tally(((_standing(s), s.turns_passed, s.status == "done") for s in c.scenarios), missing)


def _not_final(configs: list[ConfigData]) -> list[str]:
    """One line per sweep whose numbers are not final (some scenario unfinished or never run), with its counts."""
    out = []
    for sweep in dict.fromkeys(c.sweep for c in configs):
        mine = [c for c in configs if c.sweep == sweep]
        missing = sum(unrecorded(c.planned, len(c.scenarios)) for c in mine)
        rows = ((_standing(s), s.turns_passed, s.status == "done") for c in mine for s in c.scenarios)
        everything = tally(rows, missing)
        note = not_final(everything, mine[0].sweep_status or None)
        if note:
            out.append(f"{sweep}: {note}")
    return out


class _Denominators(TypedDict):
    unscored: int
    unfinished: int
    never_run: int


def _where(t: Tally) -> _Denominators:
    """The denominators a report entry carries (as keyword arguments to its Struct)."""
    return {"unscored": t.unscored, "unfinished": t.unfinished, "never_run": t.never_run}


def _keyed(configs: list[ConfigData]) -> list[ConfigData]:
    """Configurations labelled by sweep too when the selection spans several sweeps."""
    if len({c.sweep for c in configs}) <= 1:
        return configs
    return [msgspec.structs.replace(c, name=f"{c.sweep}/{c.name}", agent=f"{c.sweep}/{c.agent}") for c in configs]


def _mean_key(c: ConfigData) -> float:
    mean = summary(c).mean_turns
    return -math.inf if math.isnan(mean) else mean


def _table(configs: list[ConfigData], row_of: dict[str, str], where: dict[str, _Denominators]) -> Table:
    """The main table: each row's best mean, and every other cell tested against it (Holm over the table)."""
    rows = list(dict.fromkeys(row_of[c.name] for c in configs))
    cols = list(dict.fromkeys(_column(c) for c in configs))
    cell = {(row_of[c.name], _column(c)): c for c in configs}
    table: dict[str, dict[str, Cell]] = {}
    tests: list[tuple[str, str, float]] = []
    for r in rows:
        present = [cell[(r, col)] for col in cols if (r, col) in cell]
        best = max(present, key=_mean_key)
        top = round(_mean_key(best), 1)  # every cell showing the best mean (as printed) is bold
        table[r] = {}
        for c in present:
            s = summary(c)
            p = 1.0 if c is best or not c.scenarios else wilcoxon_paired(*_paired(c, best))
            if c is not best:
                tests.append((r, _column(c), p))
            table[r][_column(c)] = Cell(
                mean=s.mean_turns,
                se=s.se_turns,
                pass_rate=s.pass_rate,
                n=s.scenarios,
                **where[c.name],
                best=c is best,
                bold=bool(c.scenarios) and round(_mean_key(c), 1) == top,
                p_vs_best=p,
                not_worse=c is best or p > ALPHA,
            )
    adjusted = holm([p for _, _, p in tests])
    for (r, col, _), adj in zip(tests, adjusted, strict=True):
        table[r][col] = msgspec.structs.replace(table[r][col], p_holm=adj)
    return Table(rows=rows, columns=cols, cells=table)


def _survival(configs: list[ConfigData], where: dict[str, _Denominators], n_boot: int) -> dict[str, SurvivalEntry]:
    """Each configuration's curve and RMST; log-rank against the one with the best mean."""
    survival = {}
    with_data = [c for c in configs if c.scenarios]
    reference = max(with_data, key=_mean_key) if with_data else None
    for c in configs:
        d, e = survival_data(c)
        tau = float(c.n_turns + 1)
        if not d:  # nothing observed: no curve, rather than a survivor's full RMST
            survival[c.name] = SurvivalEntry(
                tau=tau,
                scored=0,
                **where[c.name],
                rmst=math.nan,
                rmst_ci=[math.nan, math.nan],
                km_times=[],
                km_survival=[],
                events=0,
                censored=0,
            )
            continue
        point, lo, hi = rmst_bootstrap(d, e, tau, n_boot=n_boot)
        km = kaplan_meier(d, e)
        against = None
        if reference is not None and c is not reference:
            rd, re_ = survival_data(reference)
            chi2, p = logrank(d, e, rd, re_)
            against = LogRank(against=reference.name, chi2=chi2, p=p)
        survival[c.name] = SurvivalEntry(
            tau=tau,
            scored=len(d),
            **where[c.name],
            rmst=point,
            rmst_ci=[lo, hi],
            km_times=list(km.times),
            km_survival=list(km.survival),
            events=int(sum(e)),
            censored=len(e) - int(sum(e)),
            km_at_risk=list(km.at_risk),
            km_events=list(km.events),
            censored_times=sorted(t for t, ev in zip(d, e, strict=True) if not ev),
            logrank_vs_best=against,
        )
    return survival


def _row(c: ConfigData, where: _Denominators) -> ConfigRow:
    s = summary(c)
    return ConfigRow(
        name=c.name,
        sweep=c.sweep,
        agent=c.agent,
        model=c.model,
        retries=c.retries,
        feedback=c.feedback,
        n_turns=c.n_turns,
        **where,
        scenarios=s.scenarios,
        mean_turns=s.mean_turns,
        se_turns=s.se_turns,
        pass_rate=s.pass_rate,
        infra_failed=s.infra_failed,
        platform_failed=s.platform_failed,
        view=s.view,
    )


def _regressions(c: ConfigData) -> Regressions:
    regression, new_feature = regressions(c)
    return Regressions(regression=regression, new_feature=new_feature)


def build(configs: list[ConfigData], n_boot: int = 2000) -> Report:
    """Everything a report shows (`reportdata.Report`; its JSON is `reportdata.to_json`)."""
    configs = _keyed(configs)
    where = {c.name: _where(tally_of(c)) for c in configs}
    notes = _not_final(configs)
    everything = configs
    configs = [msgspec.structs.replace(c, scenarios=tuple(s for s in c.scenarios if scored(s))) for c in configs]
    grid = build_grid(configs)
    # Rows are agents; on more than one model, each agent on each model (the grid below pairs across models).
    row_of = {c.name: (f"{c.agent} @ {c.model}" if grid is not None else c.agent) for c in configs}
    return Report(
        final=not notes,
        not_final=notes,
        turns=sorted({turns_words(c.n_turns) for c in configs}),
        configurations=[_row(c, where[c.name]) for c in configs],
        scenarios={
            c.name: Counts(scored=len(c.scenarios), **where[c.name], total=tally_of(full).total)
            for c, full in zip(configs, everything, strict=True)
        },
        table=_table(configs, row_of, where),
        grid=grid,
        retry_curves={c.name: retry_curve(c) for c in configs},
        survival=_survival(configs, where, n_boot),
        failures_first={c.name: failure_counts(c, "first") for c in configs},
        failures_all={c.name: failure_counts(c, "all") for c in configs},
        regressions={c.name: _regressions(c) for c in configs},
        loc_by_turn={c.name: loc_by_turn(c) for c in configs},
        views={
            c.name: Views(paper=summary(c, "paper"), censored=summary(c, "censored"))
            for c in configs
            if views_differ(c)
        },
        cost=NO_USAGE,
    )


def with_cost(report: Report, study: CostStudy) -> Report:
    """The report with the cost study's findings (`cost.study`), as `staminad report` writes it."""
    return msgspec.structs.replace(report, cost=study.text, cost_study=study.configurations)


def latex(report: Report) -> str:
    """Every LaTeX table (`latex.document`)."""
    from staminad.analysis.latex import document

    return document(report)


# The renderers are `render`'s and the JSON `reportdata`'s; they are named here too, beside `build`.
__all__ = [
    "ALPHA",
    "TABLE_RULE",
    "build",
    "csv_table",
    "latex",
    "markdown",
    "scored",
    "tally_of",
    "to_json",
    "with_cost",
]
