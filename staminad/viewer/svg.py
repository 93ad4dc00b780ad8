"""Kaplan-Meier curves as inline SVG markup for the viewer (no script, no external file, no inline style).

Every name is escaped; curves differ by colour (Okabe-Ito, readable by colour-blind readers), dash pattern
and marker, so they stay apart in greyscale; censored scenarios are ticks on their curve.
"""

from __future__ import annotations

from markupsafe import Markup, escape

from staminad.analysis.labels import wrap
from staminad.viewer.rows import Curve

# Okabe-Ito colours and dash patterns: each curve differs from its neighbours in both.
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
DASHES = ("", "6 3", "2 2", "8 3 2 3", "1 3", "10 4")

LEFT, TOP, BOTTOM = 48, 12, 36
PW, PH = 392, 252  # the plot area; the legend to its right is as wide and tall as its labels need
# Legend text: 11 px, wrapped by `wrap`; CHAR_W is a generous width per character (DejaVu Sans, a
# common wide fallback for system-ui, averages about 6.5 px at 11 px), so no label is cut by the viewBox.
CHAR_W, LINE_H, GAP = 7.3, 13, 5
CENSORED = "| = censored (done or infra)"


def survival_svg(curves: list[Curve]) -> Markup:
    """Step curves S(t) from each entry's `times`/`survival`, ticks at `censored`, x up to `tau`."""
    tau = max([c.tau for c in curves] + [1.0])
    labels = [wrap(c.name) for c in curves]
    widest = max([len(line) for lines in labels for line in lines] + [len(CENSORED)])
    lx = LEFT + PW + 10  # the legend's left edge
    width = round(lx + 36 + CHAR_W * widest + 8)
    legend_bottom = TOP + sum(LINE_H * len(lines) + GAP for lines in labels) + 20
    height = max(TOP + PH + BOTTOM, legend_bottom + 8)

    def x(t: float) -> float:
        return LEFT + PW * min(t, tau) / tau

    def y(s: float) -> float:
        return TOP + PH * (1 - s)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="survival" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Kaplan-Meier survival over turns">',
        f'<rect x="{LEFT}" y="{TOP}" width="{PW}" height="{PH}" fill="none" stroke="#999"/>',
    ]
    step = max(1, round(tau / 10))
    for tick in range(0, int(tau) + 1, step):
        parts.append(
            f'<line x1="{x(tick):.1f}" y1="{TOP + PH}" x2="{x(tick):.1f}" y2="{TOP + PH + 4}" stroke="#333"/>'
            f'<text x="{x(tick):.1f}" y="{TOP + PH + 16}" text-anchor="middle" font-size="11">{tick}</text>'
        )
    for s in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<text x="{LEFT - 6}" y="{y(s) + 4:.1f}" text-anchor="end" font-size="11">{s:g}</text>'
            f'<line x1="{LEFT}" y1="{y(s):.1f}" x2="{LEFT + PW}" y2="{y(s):.1f}" stroke="#eee"/>'
        )
    parts.append(
        f'<text x="{LEFT + PW / 2}" y="{TOP + PH + BOTTOM - 4}" text-anchor="middle" font-size="12">'
        "turns survived</text>"
    )
    ly = TOP + 14
    for i, (c, lines) in enumerate(zip(curves, labels, strict=True)):
        colour, dash = COLOURS[i % len(COLOURS)], DASHES[i % len(DASHES)]
        pts, last = [(0.0, 1.0)], 1.0
        for t, s in zip(c.times, c.survival, strict=True):
            pts += [(t, last), (t, s)]
            last = s
        pts.append((c.tau, last))
        path = " ".join(f"{x(t):.1f},{y(s):.1f}" for t, s in pts)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        name = escape(c.name)
        parts.append(
            f'<polyline class="curve" points="{path}" fill="none" stroke="{colour}" stroke-width="2"'
            f"{dash_attr}><title>{name}</title></polyline>"
        )
        for t in c.censored:
            s = _at(c, t)
            parts.append(
                f'<line x1="{x(t):.1f}" y1="{y(s) - 5:.1f}" x2="{x(t):.1f}" y2="{y(s) + 5:.1f}" '
                f'stroke="{colour}" stroke-width="1.5"/>'
            )
        spans = "".join(
            f'<tspan x="{lx + 36}" dy="{LINE_H if n else 0}">{escape(line)}</tspan>' for n, line in enumerate(lines)
        )
        parts.append(
            f'<line x1="{lx}" y1="{ly}" x2="{lx + 30}" y2="{ly}" stroke="{colour}" stroke-width="2"{dash_attr}/>'
            f'<text class="legend" x="{lx + 36}" y="{ly + 4}" font-size="11"><title>{name}</title>{spans}</text>'
        )
        ly += LINE_H * len(lines) + GAP
    parts.append(f'<text class="legend" x="{lx}" y="{ly + 10}" font-size="10" fill="#555">{CENSORED}</text></svg>')
    return Markup("".join(parts))


def _at(curve: Curve, t: float) -> float:
    s = 1.0
    for time, value in zip(curve.times, curve.survival, strict=True):
        if time <= t:
            s = value
    return s


SPARK_W, SPARK_H = 240, 36


def sparkline_svg(values: list[float], label: str) -> Markup:
    """A small line of `values` (oldest left), scaled to its own range, as inline SVG."""
    if not values:
        return Markup("")
    lo, hi = min(values), max(values)
    scale = (hi - lo) or 1.0
    n = len(values)
    step = SPARK_W / max(n - 1, 1)
    coords = " ".join(
        f"{i * step:.1f},{SPARK_H - 2 - (v - lo) / scale * (SPARK_H - 4):.1f}" for i, v in enumerate(values)
    )
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="spark" viewBox="0 0 {SPARK_W} {SPARK_H}" role="img" '
        f'aria-label="{escape(label)}"><polyline fill="none" stroke="#0072B2" stroke-width="1.5" '
        f'points="{coords}"/></svg>'
    )
