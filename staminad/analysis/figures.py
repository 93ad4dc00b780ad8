"""Figures a paper can take as they are (matplotlib, headless), drawn from the report data.

Each figure is written as vector PDF and SVG with editable text (TrueType in the PDF, real text in the
SVG) and a 300 dpi PNG. Curves differ in colour (Okabe-Ito, safe for colour-blind readers), marker and
line style, so they stay apart in greyscale, and no two of the first 32 configurations share all three
(`style`); legends sit outside the axes, long labels wrapped (`labels.wrap`); turn axes have integer ticks.
Each figure has a caption saying N, the turns, R and what its error bars or bands are; it is not drawn into
the image (a paper sets its own) but written beside it: under the figure in report.md and the static site,
as the caption of a figure float in report.tex. A figure that would carry no information is skipped with a
line saying why.

This module draws each figure from the report data and plans which the data supports; the style and the
writing out that all of them share are `plotting`'s.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path

import matplotlib
import msgspec

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from staminad.analysis.grid import grid_heatmap
from staminad.analysis.plotting import FORMATS, STYLE, Figure, FigureSet, save, scope, style, turn_axis
from staminad.analysis.reportdata import Report, SurvivalEntry, missing

Z95 = 1.959963984540054


def _bar(value: float | None) -> float:
    """An error bar's length, 0 where there is none (NaN: fewer than one value)."""
    return 0.0 if missing(value) or not value else float(value)


def greenwood_band(s: SurvivalEntry) -> tuple[list[float], list[float]]:
    """Pointwise 95% band of the Kaplan-Meier curve after each event time: Greenwood's variance on the
    log(-log S) scale, so the band stays inside [0, 1]; where S is 0 the band is the point 0."""
    lo, hi, acc = [], [], 0.0
    for surv, n, d in zip(s.km_survival, s.km_at_risk or [], s.km_events or [], strict=True):
        acc += d / (n * (n - d)) if n > d else 0.0
        if surv <= 0.0:
            lo.append(0.0)
            hi.append(0.0)
        elif surv >= 1.0 or acc == 0.0:
            lo.append(surv)
            hi.append(surv)
        else:
            c = Z95 * math.sqrt(acc) / abs(math.log(surv))
            lo.append(surv ** math.exp(c))
            hi.append(surv ** math.exp(-c))
    return lo, hi


def _steps(times: list[float], values: list[float], start: float, tau: float) -> tuple[list[float], list[float]]:
    xs, ys = [0.0], [start]
    for t, v in zip(times, values, strict=True):
        xs += [t, t]
        ys += [ys[-1], v]
    xs.append(tau)
    ys.append(ys[-1])
    return xs, ys


def survival(report: Report, out: Path, file: str = "survival", title: str = "") -> Figure:
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    if title:
        ax.set_title(title)
    for i, (name, s) in enumerate(report.survival.items()):
        if not s.scored:  # no scored scenario: no curve to draw
            continue
        st = style(i)
        xs, ys = _steps(s.km_times, s.km_survival, 1.0, s.tau)
        ax.plot(
            xs, ys, color=st["color"], linestyle=st["linestyle"], linewidth=1.5, label=f"{name} (RMST {s.rmst:.1f})"
        )
        if s.km_at_risk:
            lo, hi = greenwood_band(s)
            bx, blo = _steps(s.km_times, lo, 1.0, s.tau)
            _, bhi = _steps(s.km_times, hi, 1.0, s.tau)
            ax.fill_between(bx, blo, bhi, color=st["color"], alpha=0.12, linewidth=0)
        cens = s.censored_times or []
        if cens:
            at = [_value_at(s.km_times, s.km_survival, t) for t in cens]
            ax.plot(cens, at, linestyle="none", marker="|", markersize=9, markeredgewidth=1.4, color=st["color"])
    ax.set(xlabel="turns survived", ylabel="scenarios still passing (Kaplan-Meier)", ylim=(-0.02, 1.04))
    turn_axis(ax.xaxis)
    caption = (
        f"Kaplan-Meier survival over turns. {scope(report)}. Bands: pointwise 95% CI (Greenwood, log-log); "
        "| marks right-censored scenarios (all turns passed, or a cost cap)."
    )
    return save(fig, out, file, caption)


def _value_at(times: list[float], values: list[float], t: float) -> float:
    v = 1.0
    for time, value in zip(times, values, strict=True):
        if time <= t:
            v = value
    return v


def retry_budget(report: Report, out: Path) -> Figure:
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for i, (name, curve) in enumerate(report.retry_curves.items()):
        st = style(i)
        ax.errorbar(
            [x[0] + 1 for x in curve],
            [x[1] for x in curve],
            yerr=[_bar(x[2]) for x in curve],
            capsize=3,
            color=st["color"],
            marker=st["marker"],
            linestyle=st["linestyle"],
            markersize=4,
            label=name,
        )
    ax.set(xlabel="attempts allowed per turn (R' + 1)", ylabel="average turns passed")
    turn_axis(ax.xaxis)
    turn_axis(ax.yaxis)
    caption = (
        f"Turns passed vs retry budget, replayed from one run's history. {scope(report)}. "
        "Error bars: ±1 SE over scenarios."
    )
    return save(fig, out, "turns_vs_retry_budget", caption)


def feedback(report: Report, out: Path) -> Figure:
    order = ["minimal", "medium", "detailed"]
    by_agent: dict[str, dict[str, tuple[float, float]]] = {}
    for c in report.configurations:
        by_agent.setdefault(f"{c.agent} R={c.retries}", {})[c.feedback] = (c.mean_turns, c.se_turns)
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for i, (agent, levels) in enumerate(by_agent.items()):
        st = style(i)
        xs = [order.index(lvl) for lvl in order if lvl in levels]
        ax.errorbar(
            xs,
            [levels[order[x]][0] for x in xs],
            yerr=[_bar(levels[order[x]][1]) for x in xs],
            capsize=3,
            color=st["color"],
            marker=st["marker"],
            linestyle=st["linestyle"],
            markersize=4,
            label=agent,
        )
    ax.set_xticks(range(len(order)), order)
    ax.set(xlabel="feedback level", ylabel="average turns passed")
    turn_axis(ax.yaxis)
    caption = f"Turns passed vs feedback level. {scope(report)}. Error bars: ±1 SE over scenarios."
    return save(fig, out, "turns_vs_feedback", caption)


def heatmap(report: Report, key: str, out: Path) -> Figure:
    """Failure categories per configuration: `key` is `failures_first` or `failures_all`."""
    data = {"failures_first": report.failures_first, "failures_all": report.failures_all}[key]
    rows = list(data)
    cols = sorted({c for counts in data.values() for c in counts})
    fig, ax = plt.subplots(figsize=(max(4.5, 0.6 * len(cols) + 3.5), max(2.2, 0.35 * len(rows) + 1.2)))
    if cols:
        grid = [[data[r].get(c, 0) for c in cols] for r in rows]
        top = max(max(row) for row in grid) or 1
        ax.imshow(grid, cmap="Blues", aspect="auto", vmin=0, vmax=top)  # luminance alone carries the count
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                ax.text(
                    j,
                    i,
                    str(int(v)),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if v > top * 0.55 else "black",
                )
        ax.set_xticks(range(len(cols)), cols, rotation=35, ha="right")
    else:
        ax.text(0.5, 0.5, "no failures", ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks([])
    ax.set_yticks(range(len(rows)), rows)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    which = "the first failure of each scenario" if key == "failures_first" else "every failure under R"
    caption = f"Failure categories in {which}; each cell counts scenarios. {scope(report)}."
    return save(fig, out, key, caption, legend=False)


def loc_information(report: Report) -> str | None:
    """Why the LoC figure would carry no information, or None when it carries some."""
    series = [rows for rows in report.loc_by_turn.values() if rows]
    if not series:
        return "no lines-of-code counts recorded (stores from before LoC counting, or only infra failures)"
    if all(len({r[1] for r in rows}) <= 1 for rows in series):
        return "every configuration's code base kept the same size on every turn"
    return None


def loc(report: Report, out: Path) -> Figure:
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for i, (name, rows) in enumerate(report.loc_by_turn.items()):
        if rows:
            st = style(i)
            ax.errorbar(
                [r[0] for r in rows],
                [r[1] for r in rows],
                yerr=[_bar(r[2]) for r in rows],
                capsize=2,
                color=st["color"],
                marker=st["marker"],
                linestyle=st["linestyle"],
                markersize=3,
                label=name,
            )
    ax.set(xlabel="turn", ylabel="lines of code (workspace, no dependencies)")
    turn_axis(ax.xaxis)
    caption = (
        f"Code base size after each turn's last attempt. {scope(report)}. "
        "Error bars: ±1 SE over the scenarios that reached the turn."
    )
    return save(fig, out, "loc_vs_turn", caption)


def cost_vs_turns(report: Report, out: Path) -> Figure:
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for i, (name, c) in enumerate((report.cost_study or {}).items()):
        st = style(i)
        ax.plot(
            [x.cost for x in c.scenarios],
            [x.turns_passed for x in c.scenarios],
            linestyle="none",
            marker=st["marker"],
            color=st["color"],
            markersize=5,
            alpha=0.8,
            label=name,
        )
    ax.set(xlabel="cost per scenario (US$)", ylabel="turns passed")
    turn_axis(ax.yaxis)
    caption = f"Cost vs turns passed, one point per scenario (gateway-metered model calls). {scope(report)}."
    return save(fig, out, "cost_vs_turns", caption)


def turns_within_budget(report: Report, out: Path) -> Figure:
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for i, (name, c) in enumerate((report.cost_study or {}).items()):
        st = style(i)
        curve = c.budget_curve
        ax.errorbar(
            [b for b, _, _ in curve],
            [m for _, m, _ in curve],
            yerr=[_bar(se) for _, _, se in curve],
            capsize=2,
            color=st["color"],
            marker=st["marker"],
            linestyle=st["linestyle"],
            markersize=3,
            markevery=4,
            label=name,
        )
    ax.set(xlabel="cost budget per scenario (US$)", ylabel="average turns passed within the budget")
    turn_axis(ax.yaxis)
    caption = (
        f"Turns passed before a scenario's running cost exceeds the budget. {scope(report)}. "
        "Error bars: ±1 SE over scenarios."
    )
    return save(fig, out, "turns_within_cost_budget", caption)


Drawer = Callable[[Report, Path], Figure]


def plan(report: Report) -> tuple[list[tuple[str, Drawer]], list[str]]:
    """The figures the report data supports, by name with what draws each, and a line for each one left out."""
    drawers: list[tuple[str, Drawer]] = []
    skipped: list[str] = []
    if not report.configurations:
        return drawers, ["no figures: no configurations"]
    drawers += [
        ("survival", survival),
        ("turns_vs_retry_budget", retry_budget),
        ("failures_first", lambda r, out: heatmap(r, "failures_first", out)),
        ("failures_all", lambda r, out: heatmap(r, "failures_all", out)),
    ]
    why = loc_information(report)
    if why is None:
        drawers.append(("loc_vs_turn", loc))
    else:
        skipped.append(f"loc_vs_turn left out: {why}.")
    if len({c.feedback for c in report.configurations}) > 1:
        drawers.append(("turns_vs_feedback", feedback))
    else:
        skipped.append("turns_vs_feedback left out: every configuration uses the same feedback level.")
    if report.grid is not None:  # more than one model: the harness x model grid, and survival per model
        drawers += [("grid_mean_turns", grid_heatmap), *survival_by_model(report)]
    if report.cost_study:
        drawers += [("cost_vs_turns", cost_vs_turns), ("turns_within_cost_budget", turns_within_budget)]
    else:
        skipped.append(
            "cost_vs_turns and turns_within_cost_budget left out: no model usage recorded (needs the LLM gateway)."
        )
    return drawers, skipped


def survival_by_model(report: Report) -> list[tuple[str, Callable[[Report, Path], Figure]]]:
    """(figure name, drawer) for each model's survival figure."""
    models = [] if report.grid is None else report.grid.models
    return [(f"survival_{_file_part(m)}", functools.partial(survival_for_model, m)) for m in models]


def survival_for_model(model: str, report: Report, out: Path) -> Figure:
    """The survival figure of one model's configurations alone."""
    names = {c.name for c in report.configurations if c.model == model}
    mine = msgspec.structs.replace(
        report,
        survival={n: s for n, s in report.survival.items() if n in names},
        configurations=[c for c in report.configurations if c.name in names],
    )
    return survival(mine, out, file=f"survival_{_file_part(model)}", title=model)


def _file_part(model: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model)[:80]


def file_names(report: Report) -> list[str]:
    """Every file `draw` writes for this report data (each figure in each of FORMATS), so they can be checked first."""
    return [f"{name}.{fmt}" for name, _ in plan(report)[0] for fmt in FORMATS]


def draw(report: Report, out: Path) -> FigureSet:
    """Every figure the report data supports, and a line for each one left out."""
    out.mkdir(parents=True, exist_ok=True)
    drawers, skipped = plan(report)
    result = FigureSet(skipped=skipped)
    with plt.rc_context(STYLE):  # type: ignore[arg-type]  # matplotlib types keys as a Literal of every rc name
        result.figures += [drawer(report, out) for _, drawer in drawers]
    return result


def all_figures(report: Report, out: Path) -> list[Path]:
    return draw(report, out).paths()
