"""Reports: the paper-style table with significance marks, survival and RMST, failure analysis, as
Markdown, LaTeX, JSON or CSV; figures are drawn by `figures.py` from the same report data.

Configurations are keyed by (sweep, configuration): when a report spans several sweeps, each row and
configuration is labelled `sweep/name`, so two sweeps' configurations of one name never merge.
Which scenarios a figure is over is `staminad.engine.score`'s rule, the one every view counts by: only
scenarios that ended and say something about their agent are scored; unfinished (running, or stopped by a
cancel), never-run and unscored ones (a platform fault, nothing tested) are left out of every figure and
counted apart. Every table says how many scenarios were scored and where the others stand, and a report
over a sweep that has not ended says, first, that its numbers are not final.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import msgspec

from staminad.analysis.data import ConfigData, ScenarioData
from staminad.analysis.grid import build_grid, markdown_grid
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
from staminad.analysis.stats import holm, kaplan_meier, logrank, rmst_bootstrap, wilcoxon_paired
from staminad.engine.score import Standing, Tally, counts_text, not_final, standing, tally, turns_words

ALPHA = 0.05
# The paper's rule for its main table (Table 3), used by Markdown and LaTeX alike.
TABLE_RULE = (
    "Average turns passed ± SE (pass rate). **Bold**: best in its row (ties all bold); † not significantly "
    f"worse than the best of its row (paired Wilcoxon signed-rank over shared scenarios, p > {ALPHA}, "
    "uncorrected, as the paper's Table 3; Holm-corrected p in the CSV and JSON)."
)


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
    return standing(s.status, end_kind(s), bool(agent_attempts(s)))


def tally_of(c: ConfigData) -> Tally:
    """The configuration's figures and denominators by the shared rule (`staminad.engine.score.tally`)."""
    return tally((_standing(s), s.turns_passed, s.status == "done") for s in c.scenarios)


def _not_final(configs: list[ConfigData]) -> list[str]:
    """One line per sweep whose numbers are not final (some scenario unfinished or never run), with its counts."""
    out = []
    for sweep in dict.fromkeys(c.sweep for c in configs):
        mine = [c for c in configs if c.sweep == sweep]
        everything = tally((_standing(s), s.turns_passed, s.status == "done") for c in mine for s in c.scenarios)
        note = not_final(everything, mine[0].sweep_status or None)
        if note:
            out.append(f"{sweep}: {note}")
    return out


def _where(t: Tally) -> dict[str, int]:
    """The denominators a report entry carries."""
    return {"unscored": t.unscored, "unfinished": t.unfinished, "never_run": t.never_run}


def _keyed(configs: list[ConfigData]) -> list[ConfigData]:
    """Configurations labelled by sweep too when the selection spans several sweeps."""
    if len({c.sweep for c in configs}) <= 1:
        return configs
    return [msgspec.structs.replace(c, name=f"{c.sweep}/{c.name}", agent=f"{c.sweep}/{c.agent}") for c in configs]


def _mean_key(c: ConfigData) -> float:
    mean = summary(c).mean_turns
    return -math.inf if math.isnan(mean) else mean


def build(configs: list[ConfigData], n_boot: int = 2000) -> dict[str, Any]:
    """Everything a report shows, as plain data (also the JSON format)."""
    configs = _keyed(configs)
    tallies = {c.name: tally_of(c) for c in configs}
    where = {name: _where(t) for name, t in tallies.items()}
    notes = _not_final(configs)
    everything = configs
    configs = [msgspec.structs.replace(c, scenarios=tuple(s for s in c.scenarios if scored(s))) for c in configs]
    grid = build_grid(configs)
    # Rows are agents; on more than one model, each agent on each model (the grid below pairs across models).
    row_of = {c.name: (f"{c.agent} @ {c.model}" if grid is not None else c.agent) for c in configs}
    rows = list(dict.fromkeys(row_of[c.name] for c in configs))
    cols = list(dict.fromkeys(_column(c) for c in configs))
    cell = {(row_of[c.name], _column(c)): c for c in configs}
    table: dict[str, dict[str, Any]] = {}
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
            table[r][_column(c)] = {
                "mean": s.mean_turns,
                "se": s.se_turns,
                "pass_rate": s.pass_rate,
                "n": s.scenarios,
                **where[c.name],
                "best": c is best,
                "bold": bool(c.scenarios) and round(_mean_key(c), 1) == top,
                "p_vs_best": p,
                "not_worse": c is best or p > ALPHA,
            }
    adjusted = holm([p for _, _, p in tests])
    for (r, col, _), adj in zip(tests, adjusted, strict=True):
        table[r][col]["p_holm"] = adj
    survival = {}
    with_data = [c for c in configs if c.scenarios]
    reference = max(with_data, key=_mean_key) if with_data else None
    for c in configs:
        d, e = survival_data(c)
        tau = float(c.n_turns + 1)
        entry: dict[str, Any] = {"tau": tau, "scored": len(d), **where[c.name]}
        if not d:  # nothing observed: no curve, rather than a survivor's full RMST
            entry.update(rmst=math.nan, rmst_ci=[math.nan, math.nan], km_times=[], km_survival=[], events=0, censored=0)
            survival[c.name] = entry
            continue
        point, lo, hi = rmst_bootstrap(d, e, tau, n_boot=n_boot)
        km = kaplan_meier(d, e)
        entry.update(
            rmst=point,
            rmst_ci=[lo, hi],
            km_times=list(km.times),
            km_survival=list(km.survival),
            events=int(sum(e)),
            censored=len(e) - int(sum(e)),
            km_at_risk=list(km.at_risk),
            km_events=list(km.events),
            censored_times=sorted(t for t, ev in zip(d, e, strict=True) if not ev),
        )
        if reference is not None and c is not reference:
            rd, re_ = survival_data(reference)
            chi2, p = logrank(d, e, rd, re_)
            entry["logrank_vs_best"] = {"against": reference.name, "chi2": chi2, "p": p}
        survival[c.name] = entry
    return {
        "final": not notes,
        "not_final": notes,  # one line per sweep whose numbers may still change
        "turns": sorted({turns_words(c.n_turns) for c in configs}),
        "configurations": [
            {
                "name": c.name,
                "sweep": c.sweep,
                "agent": c.agent,
                "model": c.model,
                "retries": c.retries,
                "feedback": c.feedback,
                "n_turns": c.n_turns,
                **where[c.name],
                **{k: v for k, v in msgspec.structs.asdict(summary(c)).items() if k != "name"},
            }
            for c in configs
        ],
        "scenarios": {
            c.name: {"scored": len(c.scenarios), **where[c.name], "total": len(full.scenarios)}
            for c, full in zip(configs, everything, strict=True)
        },
        "table": {"rows": rows, "columns": cols, "cells": table},
        **({"grid": grid} if grid is not None else {}),  # on more than one model only
        "retry_curves": {c.name: retry_curve(c) for c in configs},
        "survival": survival,
        "failures_first": {c.name: dict(failure_counts(c, "first")) for c in configs},
        "failures_all": {c.name: dict(failure_counts(c, "all")) for c in configs},
        "regressions": {c.name: dict(zip(("regression", "new_feature"), regressions(c), strict=True)) for c in configs},
        "loc_by_turn": {c.name: loc_by_turn(c) for c in configs},
        "views": {
            c.name: {v: msgspec.structs.asdict(summary(c, v)) for v in ("paper", "censored")}
            for c in configs
            if views_differ(c)
        },
        "cost": "no token or cost data recorded for these sweeps (needs the LLM gateway)",
    }


def _one(value: float | None) -> str:
    """One decimal, or `-` where a view scored nothing (NaN, or None once cleaned for JSON)."""
    return "-" if value is None or math.isnan(value) else f"{value:.1f}"


def _counted(scored_n: int, entry: dict[str, Any]) -> str:
    """`n=3; 1 unfinished, 2 never run` from a report entry's denominators (`staminad.engine.score.counts_text`)."""
    return counts_text(
        Tally(
            scored=scored_n,
            unscored=entry.get("unscored", 0),
            unfinished=entry.get("unfinished", 0),
            never_run=entry.get("never_run", 0),
        )
    )


def _fmt(cellv: dict[str, Any] | None, bold: tuple[str, str], mark: str) -> str:
    if cellv is None:
        return "-"
    if not cellv["n"]:
        return f"- ({_counted(0, cellv)})"
    text = f"{cellv['mean']:.1f} ± {cellv['se']:.1f} ({cellv['pass_rate'] * 100:.0f}%, {_counted(cellv['n'], cellv)})"
    if cellv.get("bold", cellv["best"]):
        return f"{bold[0]}{text}{bold[1]}"
    return text + (mark if cellv["not_worse"] else "")


def markdown(report: dict[str, Any]) -> str:
    t = report["table"]
    out = ["# StaminaBench report", ""]
    for note in report.get("not_final", []):
        out += [f"**NOT FINAL** - {note}.", ""]
    out += [
        f"{TABLE_RULE} n: scenarios scored; unfinished (running, or stopped by a cancel), never-run and unscored "
        "ones (ended by a platform fault, or with nothing tested) are left out of every figure. A harness that "
        "ran out of infra retries ends its scenario, which counts (paper). "
        + "; ".join(report.get("turns", []))
        + (": turns passed counts turn 0, the initial implementation." if report.get("turns") else ""),
        "",
        "| agent | " + " | ".join(t["columns"]) + " |",
        "|---|" + "---|" * len(t["columns"]),
    ]
    for r in t["rows"]:
        cells = [_fmt(t["cells"][r].get(col), ("**", "**"), " †") for col in t["columns"]]
        out.append(f"| {r} | " + " | ".join(cells) + " |")
    if report.get("grid"):
        out += ["", *markdown_grid(report["grid"])]
    if report.get("views"):
        out += [
            "",
            "Headline scores follow the paper: a scenario whose harness ran out of infra retries ends there "
            "and counts. Counting only the agent's code (such scenarios left out) gives:",
            "",
        ]
        out += [
            f"- {name}: {_one(v['censored']['mean_turns'])} ± {_one(v['censored']['se_turns'])} over "
            f"{v['censored']['scenarios']} scenarios (paper: {_one(v['paper']['mean_turns'])} over "
            f"{v['paper']['scenarios']})"
            for name, v in report["views"].items()
        ]
    out += [
        "",
        "## Survival",
        "",
        "Turns survived, right-censored at N+1; a harness out of infra retries is a "
        "failure (paper), a platform fault leaves the scenario out. "
        "RMST(N+1) with a 95% scenario-bootstrap CI; log-rank against the configuration with the best mean.",
        "",
        "| configuration | scenarios | RMST | 95% CI | failures / censored | log-rank p vs best |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in report["survival"].items():
        lr = s.get("logrank_vs_best")
        p = "-" if lr is None else f"{lr['p']:.3g}"
        counted = _counted(s["scored"], s)
        if s["rmst"] is None or not s["scored"]:
            out.append(f"| {name} | {counted} | - | - | - | - |")
            continue
        out.append(
            f"| {name} | {counted} | {s['rmst']:.2f} | {s['rmst_ci'][0]:.2f}-{s['rmst_ci'][1]:.2f} | "
            f"{s['events']} / {s['censored']} | {p} |"
        )
    out += ["", "## Retry budget (from one run's history)", ""]
    for name, curve in report["retry_curves"].items():
        n = report["scenarios"][name]
        out.append(
            f"- {name} ({_counted(n['scored'], n)}): "
            + ", ".join("-" if m is None else f"R'={b}: {m:.1f} ± {se:.1f}" for b, m, se in curve)
        )
    out += [
        "",
        "## Failures",
        "",
        "| configuration | scenarios | first failure | all failures | regression / new-feature tests |",
        "|---|---|---|---|---|",
    ]
    for name in report["failures_first"]:
        first = ", ".join(f"{k} {v}" for k, v in sorted(report["failures_first"][name].items())) or "-"
        every = ", ".join(f"{k} {v}" for k, v in sorted(report["failures_all"][name].items())) or "-"
        reg = report["regressions"][name]
        n = report["scenarios"][name]
        out.append(
            f"| {name} | {_counted(n['scored'], n)} | {first} | {every} | {reg['regression']} / {reg['new_feature']} |"
        )
    out += ["", f"Cost: {report['cost']}.", ""]
    return "\n".join(out)


def latex(report: dict[str, Any]) -> str:
    from staminad.analysis.latex import document

    return document(report)


def csv_table(report: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["agent", "setting", "mean_turns", "se", "pass_rate", "n", "unscored", "best", "p_vs_best", "p_holm"])
    t = report["table"]
    for r in t["rows"]:
        for col, v in t["cells"][r].items():
            w.writerow(
                [
                    r,
                    col,
                    _num(v["mean"]),
                    _num(v["se"]),
                    _num(v["pass_rate"]),
                    v["n"],
                    v["unscored"],
                    v["best"],
                    f"{v['p_vs_best']:.6g}",
                    "" if "p_holm" not in v else f"{v['p_holm']:.6g}",
                ]
            )
    return buf.getvalue()


def _num(value: float | None) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"


def clean(value: Any) -> Any:
    """NaN to None, recursively, so the JSON is valid."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value
