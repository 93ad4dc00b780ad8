"""LaTeX tables for a paper: main table, retry budget, feedback ablation, failure categories.

Each is a `table` float with a caption and a label and booktabs rules. The main table follows the paper's
rule (bold: the best of each row; dagger: not significantly worse than it), as the Markdown report does; the
retry, feedback and failure tables bold the best of each column, as their captions say (every tied value
is bold). Text from configuration names is escaped. A report whose numbers are not final says so first.
"""

from __future__ import annotations

import math

from staminad.analysis.reportdata import ConfigRow, Report, missing

_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def esc(text: str) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in str(text))


def _best(values: list[float | None], high: bool = True, digits: int = 1) -> set[int]:
    """Indices of the best values as printed (rounded), so ties on the page are all bold."""
    shown = [None if v is None or math.isnan(v) else round(v, digits) for v in values]
    present = [v for v in shown if v is not None]
    if not present:
        return set()
    top = max(present) if high else min(present)
    return {i for i, v in enumerate(shown) if v == top}


def _table(label: str, caption: str, head: list[str], rows: list[list[str]]) -> str:
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{caption}}}",
        rf"\label{{tab:{label}}}",
        r"\begin{tabular}{l" + "c" * (len(head) - 1) + "}",
        r"\toprule",
        " & ".join(head) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(r) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


def _bold(text: str, on: bool) -> str:
    return rf"\textbf{{{text}}}" if on else text


def _pm(mean: float | None, se: float | None) -> str:
    """Mean plus-minus SE, or `--` where nothing was scored."""
    return "--" if missing(mean) else rf"{mean:.1f} $\pm$ {0.0 if missing(se) else se:.1f}"


def main_table(report: Report) -> str:
    """The paper's main table, by its rule (as the Markdown report): bold is the best of each row (ties all
    bold), $^\\dagger$ not significantly worse than it (uncorrected paired Wilcoxon, as the paper's Table 3)."""
    t = report.table
    rows = []
    for r in t.rows:
        cells = []
        for col in t.columns:
            v = t.cells[r].get(col)
            if v is None:
                cells.append("--")
                continue
            if not v.n:
                cells.append("n/a")
                continue
            text = rf"{v.mean:.1f} $\pm$ {v.se:.1f} ({v.pass_rate * 100:.0f}\%)"
            bold = v.bold
            mark = r"$^\dagger$" if not bold and v.not_worse else ""
            cells.append(_bold(text, bold) + mark)
        rows.append([esc(r), *cells])
    caption = (
        r"Average turns passed $\pm$ SE (pass rate). Bold: best in its row (ties all bold); "
        r"$^\dagger$: not significantly worse than the best of its row (paired Wilcoxon signed-rank, "
        r"$p > 0.05$, uncorrected)."
    )
    return _table("main", caption, ["agent", *[esc(c) for c in t.columns]], rows)


def retry_table(report: Report) -> str:
    curves = report.retry_curves
    width = max((len(c) for c in curves.values()), default=0)
    cols = [[c[b][1] if b < len(c) else None for c in curves.values()] for b in range(width)]
    best = [_best(col) for col in cols]
    rows = []
    for i, (name, curve) in enumerate(curves.items()):
        rows.append(
            [
                esc(name),
                *[_bold(_pm(curve[b][1], curve[b][2]), i in best[b]) if b < len(curve) else "--" for b in range(width)],
            ]
        )
    caption = (
        r"Average turns passed $\pm$ SE with a retry budget of $R'$, replayed from one run's history. "
        "Bold: best in its column."
    )
    return _table("retry-budget", caption, ["configuration", *[f"$R'={b}$" for b in range(width)]], rows)


def feedback_table(report: Report) -> str | None:
    order = [lvl for lvl in ("minimal", "medium", "detailed") if any(c.feedback == lvl for c in report.configurations)]
    if len(order) < 2:
        return None
    by: dict[str, dict[str, ConfigRow]] = {}
    for c in report.configurations:
        by.setdefault(f"{c.agent} R={c.retries}", {})[c.feedback] = c
    names = list(by)
    best = [_best([by[n][lvl].mean_turns if lvl in by[n] else None for n in names]) for lvl in order]
    rows = [
        [
            esc(n),
            *[
                _bold(_pm(by[n][lvl].mean_turns, by[n][lvl].se_turns), i in best[j]) if lvl in by[n] else "--"
                for j, lvl in enumerate(order)
            ],
        ]
        for i, n in enumerate(names)
    ]
    caption = r"Feedback ablation: average turns passed $\pm$ SE per feedback level. Bold: best in its column."
    return _table("feedback", caption, ["agent", *order], rows)


def failure_table(report: Report) -> str:
    data = report.failures_first
    cats = sorted({k for counts in data.values() for k in counts})
    names = list(data)
    best = [_best([float(data[n].get(k, 0)) for n in names], digits=0) for k in cats]
    rows = [
        [esc(n), *[_bold(str(data[n].get(k, 0)), i in best[j] and data[n].get(k, 0) > 0) for j, k in enumerate(cats)]]
        for i, n in enumerate(names)
    ]
    caption = (
        "Failure categories of each scenario's first failure (scenarios per category). Bold: the most in its column."
    )
    return _table("failures", caption, ["configuration", *[esc(k) for k in cats]], rows)


def document(report: Report) -> str:
    """Every table, in order; needs `\\usepackage{booktabs}`."""
    parts = ["% StaminaBench tables; needs \\usepackage{booktabs}", ""]
    for note in report.not_final:
        parts.append(f"% NOT FINAL - {note}")
    if report.not_final:
        parts += [r"\textbf{NOT FINAL: these tables are from sweeps that have not ended.}", ""]
    parts += [main_table(report), retry_table(report)]
    fb = feedback_table(report)
    parts.append(fb if fb is not None else "% feedback ablation left out: one feedback level only\n")
    parts.append(failure_table(report))
    return "\n".join(parts)
