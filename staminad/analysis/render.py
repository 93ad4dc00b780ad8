"""The report as text: Markdown (`report.md`, the README's tables) and the main table as CSV.

Both read the typed report (`reportdata.Report`); LaTeX is `latex.py`'s. A figure the data cannot give (NaN:
nothing scored) is shown as `-` (Markdown) or left empty (CSV).
"""

from __future__ import annotations

import csv
import io

from staminad.analysis.grid import markdown_grid
from staminad.analysis.reportdata import Cell, Counts, Report, SurvivalEntry, missing
from staminad.engine.score import Tally, counts_text

ALPHA = 0.05
# The paper's rule for its main table (Table 3), used by Markdown and LaTeX alike.
TABLE_RULE = (
    "Average turns passed ± SE (pass rate). **Bold**: best in its row (ties all bold); † not significantly "
    f"worse than the best of its row (paired Wilcoxon signed-rank over shared scenarios, p > {ALPHA}, "
    "uncorrected, as the paper's Table 3; Holm-corrected p in the CSV and JSON)."
)


def _one(value: float | None) -> str:
    """One decimal, or `-` where a view scored nothing."""
    return "-" if missing(value) else f"{value:.1f}"


def _counted(scored_n: int, entry: Cell | Counts | SurvivalEntry) -> str:
    """`n=3; 1 unfinished, 2 never run` from a report entry's denominators (`staminad.engine.score.counts_text`)."""
    return counts_text(
        Tally(scored=scored_n, unscored=entry.unscored, unfinished=entry.unfinished, never_run=entry.never_run)
    )


def _fmt(cellv: Cell | None, bold: tuple[str, str], mark: str) -> str:
    if cellv is None:
        return "-"
    if not cellv.n:
        return f"- ({_counted(0, cellv)})"
    text = f"{cellv.mean:.1f} ± {cellv.se:.1f} ({cellv.pass_rate * 100:.0f}%, {_counted(cellv.n, cellv)})"
    if cellv.bold:
        return f"{bold[0]}{text}{bold[1]}"
    return text + (mark if cellv.not_worse else "")


def _views(report: Report) -> list[str]:
    if not report.views:
        return []
    return [
        "",
        "Headline scores follow the paper: a scenario whose harness ran out of infra retries ends there "
        "and counts. Counting only the agent's code (such scenarios left out) gives:",
        "",
        *(
            f"- {name}: {_one(v.censored.mean_turns)} ± {_one(v.censored.se_turns)} over "
            f"{v.censored.scenarios} scenarios (paper: {_one(v.paper.mean_turns)} over {v.paper.scenarios})"
            for name, v in report.views.items()
        ),
    ]


def _survival(report: Report) -> list[str]:
    out = [
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
    for name, s in report.survival.items():
        lr = s.logrank_vs_best
        p = "-" if lr is None else f"{lr.p:.3g}"
        counted = _counted(s.scored, s)
        if missing(s.rmst) or not s.scored:
            out.append(f"| {name} | {counted} | - | - | - | - |")
            continue
        out.append(
            f"| {name} | {counted} | {s.rmst:.2f} | {s.rmst_ci[0]:.2f}-{s.rmst_ci[1]:.2f} | "
            f"{s.events} / {s.censored} | {p} |"
        )
    return out


def _failures(report: Report) -> list[str]:
    out = [
        "",
        "## Failures",
        "",
        "| configuration | scenarios | first failure | all failures | regression / new-feature tests |",
        "|---|---|---|---|---|",
    ]
    for name in report.failures_first:
        first = ", ".join(f"{k} {v}" for k, v in sorted(report.failures_first[name].items())) or "-"
        every = ", ".join(f"{k} {v}" for k, v in sorted(report.failures_all[name].items())) or "-"
        reg = report.regressions[name]
        n = report.scenarios[name]
        out.append(f"| {name} | {_counted(n.scored, n)} | {first} | {every} | {reg.regression} / {reg.new_feature} |")
    return out


def markdown(report: Report) -> str:
    t = report.table
    out = ["# StaminaBench report", ""]
    for note in report.not_final:
        out += [f"**NOT FINAL** - {note}.", ""]
    out += [
        f"{TABLE_RULE} n: scenarios scored; unfinished (running, or stopped by a cancel), never-run and unscored "
        "ones (ended by a platform fault, or with nothing tested) are left out of every figure. A harness that "
        "ran out of infra retries ends its scenario, which counts (paper). "
        + "; ".join(report.turns)
        + (": turns passed counts turn 0, the initial implementation." if report.turns else ""),
        "",
        "| agent | " + " | ".join(t.columns) + " |",
        "|---|" + "---|" * len(t.columns),
    ]
    for r in t.rows:
        cells = [_fmt(t.cells[r].get(col), ("**", "**"), " †") for col in t.columns]
        out.append(f"| {r} | " + " | ".join(cells) + " |")
    if report.grid is not None:
        out += ["", *markdown_grid(report.grid)]
    out += _views(report)
    out += _survival(report)
    out += ["", "## Retry budget (from one run's history)", ""]
    for name, curve in report.retry_curves.items():
        n = report.scenarios[name]
        out.append(
            f"- {name} ({_counted(n.scored, n)}): "
            + ", ".join("-" if missing(m) else f"R'={b}: {m:.1f} ± {se:.1f}" for b, m, se in curve)
        )
    out += _failures(report)
    out += ["", f"Cost: {report.cost}.", ""]
    return "\n".join(out)


def csv_table(report: Report) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["agent", "setting", "mean_turns", "se", "pass_rate", "n", "unscored", "best", "p_vs_best", "p_holm"])
    t = report.table
    for r in t.rows:
        for col, v in t.cells[r].items():
            w.writerow(
                [
                    r,
                    col,
                    _num(v.mean),
                    _num(v.se),
                    _num(v.pass_rate),
                    v.n,
                    v.unscored,
                    v.best,
                    f"{v.p_vs_best:.6g}",
                    "" if v.p_holm is None else f"{v.p_holm:.6g}",
                ]
            )
    return buf.getvalue()


def _num(value: float | None) -> str:
    return "" if missing(value) else f"{value:.4f}"


__all__ = ["ALPHA", "TABLE_RULE", "csv_table", "markdown"]
