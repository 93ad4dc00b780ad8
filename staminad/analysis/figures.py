"""Figures (matplotlib, headless): written as PNG and SVG from the report data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def _save(fig: Any, out: Path, name: str) -> list[Path]:
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    fig.tight_layout()
    for p in paths:
        fig.savefig(p, dpi=130)
    plt.close(fig)
    return paths


def survival(report: dict[str, Any], out: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, s in report["survival"].items():
        if s["rmst"] is None:  # no scored scenario: no curve to draw
            continue
        xs, ys = [0.0], [1.0]
        for t, v in zip(s["km_times"], s["km_survival"], strict=True):
            xs += [t, t]
            ys += [ys[-1], v]
        xs.append(s["tau"])
        ys.append(ys[-1])
        ax.plot(xs, ys, label=f"{name} (RMST {s['rmst']:.1f})")
    ax.set(xlabel="turns survived", ylabel="scenarios still going (Kaplan-Meier)", ylim=(-0.02, 1.02),
           title="Survival over turns")
    ax.legend(fontsize=7)
    return _save(fig, out, "survival")


def retry_budget(report: dict[str, Any], out: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, curve in report["retry_curves"].items():
        b = [x[0] + 1 for x in curve]
        ax.errorbar(b, [x[1] for x in curve], yerr=[x[2] for x in curve], marker="o", capsize=3, label=name)
    ax.set(xlabel="attempts allowed per turn (R'+1)", ylabel="average turns passed",
           title="Turns passed vs retry budget (one run)")
    ax.legend(fontsize=7)
    return _save(fig, out, "turns_vs_retry_budget")


def feedback(report: dict[str, Any], out: Path) -> list[Path]:
    order = ["minimal", "medium", "detailed"]
    by_agent: dict[str, dict[str, tuple[float, float]]] = {}
    for c in report["configurations"]:
        by_agent.setdefault(f"{c['agent']} R={c['retries']}", {})[c["feedback"]] = (c["mean_turns"], c["se_turns"])
    fig, ax = plt.subplots(figsize=(6, 4))
    for agent, levels in by_agent.items():
        xs = [lvl for lvl in order if lvl in levels]
        ax.errorbar(xs, [levels[x][0] for x in xs], yerr=[levels[x][1] for x in xs], marker="o", capsize=3,
                    label=agent)
    ax.set(xlabel="feedback level", ylabel="average turns passed", title="Turns passed vs feedback level")
    ax.legend(fontsize=7)
    return _save(fig, out, "turns_vs_feedback")


def heatmap(report: dict[str, Any], key: str, out: Path) -> list[Path]:
    data = report[key]
    rows = list(data)
    cols = sorted({c for counts in data.values() for c in counts})
    fig, ax = plt.subplots(figsize=(max(5, 0.8 * len(cols) + 3), max(2.5, 0.45 * len(rows) + 1.5)))
    if cols:
        grid = np.array([[data[r].get(c, 0) for c in cols] for r in rows], dtype=float)
        ax.imshow(grid, cmap="Reds", aspect="auto", vmin=0)
        top = grid.max() or 1.0
        for i in range(len(rows)):
            for j in range(len(cols)):
                ax.text(j, i, str(int(grid[i, j])), ha="center", va="center", fontsize=8,
                        color="white" if grid[i, j] > top * 0.6 else "black")
        ax.set_xticks(range(len(cols)), cols, rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    which = "first failure of each scenario" if key == "failures_first" else "all failures under R"
    fig.suptitle(f"Failure categories: {which} (cells count scenarios)", fontsize=10)
    return _save(fig, out, key)


def loc(report: dict[str, Any], out: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, rows in report["loc_by_turn"].items():
        if rows:
            ax.errorbar([r[0] for r in rows], [r[1] for r in rows], yerr=[r[2] for r in rows], label=name,
                        capsize=2)
    ax.set(xlabel="turn", ylabel="lines of code (workspace, no dependencies)", title="Code base size vs turn")
    ax.legend(fontsize=7)
    return _save(fig, out, "loc_vs_turn")


def all_figures(report: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = survival(report, out) + retry_budget(report, out) + heatmap(report, "failures_first", out)
    paths += heatmap(report, "failures_all", out) + loc(report, out)
    if len({c["feedback"] for c in report["configurations"]}) > 1:
        paths += feedback(report, out)
    return paths
