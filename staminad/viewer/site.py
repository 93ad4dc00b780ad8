"""`staminad report --html`: the viewer's pages as one static, self-contained site (no server, no script).

The same templates and page data as the live viewer, linked file to file; figures are embedded as data
URIs, so the directory can go into a paper's supplement as it is. Comparison pages: the best configuration
against each other one, and each harness across the sweep's models.
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path
from typing import Any

from staminad.viewer import model
from staminad.viewer.render import STATIC, StaticLinks, render
from staminad.viewer.rows import ConfigSummary
from state.queries import connect_readonly


def write_site(state_dir: Path, out: Path, sweeps: list[str] | None = None, figures: Any = None) -> int:
    """Write index, sweep, scenario and comparison pages (and the figures page) under `out`; returns pages."""
    links = StaticLinks()
    out.mkdir(parents=True, exist_ok=True)
    (out / "assets").mkdir(exist_ok=True)
    shutil.copyfile(STATIC / "viewer.css", out / "assets" / "viewer.css")
    conn = connect_readonly(state_dir / "staminad.db")
    written = 0

    def page(name: str, template: str, **context: Any) -> None:
        nonlocal written
        (out / name).write_text(render(template, links, **context))
        written += 1

    try:
        front = model.sweeps_page(conn)
        if sweeps:
            front["sweeps"] = [s for s in front["sweeps"] if s.id in sweeps]
        front["figures"] = _figures(figures)
        page(links.home(), "sweeps.html", **front)
        for s in front["sweeps"]:
            sweep = model.sweep_page(conn, s.id)
            pairs = comparisons(sweep["configs"])
            page(links.sweep(s.id), "sweep.html", comparisons=pairs, **sweep)
            for row in sweep["grid"]:
                page(
                    links.scenario(s.id, row.configuration, row.seed),
                    "scenario.html",
                    **model.scenario_page(conn, s.id, row.configuration, row.seed),
                )
            for a, b in pairs:
                page(links.compare(s.id, a, b), "compare.html", **model.compare_page(conn, s.id, a, b))
    finally:
        conn.close()
    return written


def comparisons(configs: list[ConfigSummary]) -> list[tuple[str, str]]:
    """The comparison pages a static site carries: the best configuration against each other one, then each harness
    across models (its configuration on the sweep's first model against the same harness, R and feedback on each
    other model), each pair once."""
    best = max((c for c in configs if c.mean is not None), key=lambda c: c.mean or 0.0, default=None)
    pairs = [(best.name, c.name) for c in configs if best and c.name != best.name]
    first: dict[tuple[str, int, str], str] = {}
    for c in configs:
        if not c.model:
            continue  # a store from before models were an axis records none
        a = first.setdefault((c.agent, c.retries, c.feedback), c.name)
        if a != c.name and (a, c.name) not in pairs and (c.name, a) not in pairs:
            pairs.append((a, c.name))
    return pairs


def _figures(figures: Any) -> list[dict[str, str]]:
    """Each drawn figure as a caption and an embedded PNG (data URI), plus links to its vector files."""
    if figures is None:
        return []
    out = []
    for f in figures.figures:
        png = next(Path(p) for p in f.paths if p.endswith(".png"))
        out.append(
            {
                "name": f.name,
                "caption": f.caption,
                "src": "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode(),
            }
        )
    return out + [{"name": "", "caption": line, "src": ""} for line in figures.skipped]
