"""The paper's grid: harness x model, for each retry budget R and feedback level, paired across models.

Present when the selected configurations ran on more than one model. For each harness and setting, each
model is compared with that harness's best model by the paired Wilcoxon signed-rank test over the scenarios
both scored (every configuration of a sweep runs the same seeds), Holm-corrected over the whole grid. The
figures are a heatmap of mean turns (harness x model, one panel per setting) and one survival figure per
model.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import msgspec

from staminad.analysis.data import ConfigData
from staminad.analysis.metrics import summary
from staminad.analysis.plotting import Figure, save, scope
from staminad.analysis.reportdata import Grid, GridCell, Report, missing
from staminad.analysis.stats import holm, wilcoxon_paired


def _setting(c: ConfigData) -> str:
    return f"R={c.retries} {c.feedback}"


def _paired(a: ConfigData, b: ConfigData) -> tuple[list[float], list[float]]:
    sa, sb = a.by_seed(), b.by_seed()
    seeds = sorted(set(sa) & set(sb))
    return [sa[s].turns_passed for s in seeds], [sb[s].turns_passed for s in seeds]


def _mean(c: ConfigData) -> float:
    m = summary(c).mean_turns
    return -math.inf if math.isnan(m) else m


def build_grid(configs: list[ConfigData]) -> Grid | None:
    """The grid's data from scored configurations (None when they ran on fewer than two models)."""
    models = list(dict.fromkeys(c.model for c in configs))
    if len(models) < 2:
        return None
    agents = list(dict.fromkeys(c.agent for c in configs))
    settings = list(dict.fromkeys(_setting(c) for c in configs))
    at = {(_setting(c), c.agent, c.model): c for c in configs}
    cells: dict[str, dict[str, dict[str, GridCell]]] = {}
    tests: list[tuple[str, str, str, float]] = []
    for setting in settings:
        cells[setting] = {}
        for agent in agents:
            present = [at[(setting, agent, m)] for m in models if (setting, agent, m) in at]
            if not present:
                continue
            best = max(present, key=_mean)
            row: dict[str, GridCell] = {}
            for c in present:
                s = summary(c)
                a, b = _paired(c, best)
                p = 1.0 if c is best or not a else wilcoxon_paired(a, b)
                if c is not best:
                    tests.append((setting, agent, c.model, p))
                row[c.model] = GridCell(
                    mean=s.mean_turns,
                    se=s.se_turns,
                    pass_rate=s.pass_rate,
                    n=s.scenarios,
                    paired=len(a),
                    best=c is best,
                    p_vs_best=p,
                )
            cells[setting][agent] = row
    for (setting, agent, model, _), adj in zip(tests, holm([t[3] for t in tests]), strict=True):
        cells[setting][agent][model] = msgspec.structs.replace(cells[setting][agent][model], p_holm=adj)
    return Grid(agents=agents, models=models, settings=settings, cells=cells)


def markdown_grid(grid: Grid) -> list[str]:
    """The report's harness x model section: one table per setting."""
    out = [
        "## Harness x model",
        "",
        "Average turns passed ± SE (n scored). **Bold**: the harness's best model; p: paired Wilcoxon "
        "signed-rank against that model over the scenarios both scored (Holm-corrected over the grid).",
    ]
    for setting in grid.settings:
        out += ["", f"### {setting}", "", "| harness | " + " | ".join(grid.models) + " |"]
        out.append("|---|" + "---|" * len(grid.models))
        for agent, row in grid.cells[setting].items():
            out.append(f"| {agent} | " + " | ".join(_cell(row.get(m)) for m in grid.models) + " |")
    return [*out, ""]


def _cell(v: GridCell | None) -> str:
    if v is None:
        return "-"
    if not v.n:
        return "- (n=0)"
    text = f"{v.mean:.1f} ± {v.se:.1f} (n={v.n})"
    if v.best:
        return f"**{text}**"
    return f"{text}, p={v.p_vs_best if v.p_holm is None else v.p_holm:.3g}"


def grid_heatmap(report: Report, out: Path) -> Figure:
    """Mean turns passed per harness x model, one panel per setting."""
    grid = report.grid
    if grid is None:
        raise ValueError("the report has no harness x model grid (its configurations ran on one model)")
    settings, agents, models = grid.settings, grid.agents, grid.models
    fig, axes = plt.subplots(
        1,
        len(settings),
        figsize=(max(4.5, (0.9 * len(models) + 2.5) * len(settings)), max(2.2, 0.4 * len(agents) + 1.4)),
        squeeze=False,
    )
    top = max(
        (v.mean for rows in grid.cells.values() for row in rows.values() for v in row.values() if v.n),
        default=1.0,
    )
    for ax, setting in zip(axes[0], settings, strict=True):
        rows = grid.cells[setting]
        values = [[_value(rows.get(a, {}).get(m)) for m in models] for a in agents]
        ax.imshow(
            [[0.0 if math.isnan(v) else v for v in r] for r in values],
            cmap="Blues",
            vmin=0,
            vmax=top or 1,
            aspect="auto",
        )
        for i, r in enumerate(values):
            for j, v in enumerate(r):
                dark = not math.isnan(v) and v > top * 0.55
                text = "-" if math.isnan(v) else f"{v:.1f}"
                ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
        ax.set_xticks(range(len(models)), models, rotation=35, ha="right")
        ax.set_yticks(range(len(agents)), agents)
        ax.set_title(setting)
        for side in ("top", "right", "left", "bottom"):
            ax.spines[side].set_visible(False)
    caption = f"Mean turns passed, harness x model (scored scenarios only). {scope(report)}."
    return save(fig, out, "grid_mean_turns", caption, legend=False)


def _value(v: GridCell | None) -> float:
    return math.nan if v is None or not v.n or missing(v.mean) else float(v.mean)


__all__ = ["build_grid", "grid_heatmap", "markdown_grid"]
