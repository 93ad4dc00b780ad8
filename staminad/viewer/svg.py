"""Kaplan-Meier curves as inline SVG markup for the viewer (no script, no external file, no inline style).

Every name is escaped; curves differ by colour (Okabe-Ito, readable by colour-blind readers), dash pattern
and marker, so they stay apart in greyscale; censored scenarios are ticks on their curve.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup, escape

# Okabe-Ito colours and dash patterns: each curve differs from its neighbours in both.
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
DASHES = ("", "6 3", "2 2", "8 3 2 3", "1 3", "10 4")

W, H, LEFT, RIGHT, TOP, BOTTOM = 640, 300, 48, 200, 12, 36


def survival_svg(curves: list[dict[str, Any]]) -> Markup:
    """Step curves S(t) from each entry's `times`/`survival`, ticks at `censored`, x up to `tau`."""
    tau = max([float(c["tau"]) for c in curves] + [1.0])
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + pw * min(t, tau) / tau

    def y(s: float) -> float:
        return TOP + ph * (1 - s)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="survival" viewBox="0 0 {W} {H}" role="img" '
        f'aria-label="Kaplan-Meier survival over turns">',
        f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>',
    ]
    step = max(1, round(tau / 10))
    for t in range(0, int(tau) + 1, step):
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{TOP + ph}" x2="{x(t):.1f}" y2="{TOP + ph + 4}" stroke="#333"/>'
            f'<text x="{x(t):.1f}" y="{TOP + ph + 16}" text-anchor="middle" font-size="11">{t}</text>'
        )
    for s in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<text x="{LEFT - 6}" y="{y(s) + 4:.1f}" text-anchor="end" font-size="11">{s:g}</text>'
            f'<line x1="{LEFT}" y1="{y(s):.1f}" x2="{LEFT + pw}" y2="{y(s):.1f}" stroke="#eee"/>'
        )
    parts.append(f'<text x="{LEFT + pw / 2}" y="{H - 4}" text-anchor="middle" font-size="12">turns survived</text>')
    for i, c in enumerate(curves):
        colour, dash = COLOURS[i % len(COLOURS)], DASHES[i % len(DASHES)]
        pts, last = [(0.0, 1.0)], 1.0
        for t, s in zip(c["times"], c["survival"], strict=True):
            pts += [(t, last), (t, s)]
            last = s
        pts.append((c["tau"], last))
        path = " ".join(f"{x(t):.1f},{y(s):.1f}" for t, s in pts)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        name = escape(c["name"])
        parts.append(
            f'<polyline class="curve" points="{path}" fill="none" stroke="{colour}" stroke-width="2"'
            f"{dash_attr}><title>{name}</title></polyline>"
        )
        for t in c["censored"]:
            s = _at(c, t)
            parts.append(
                f'<line x1="{x(t):.1f}" y1="{y(s) - 5:.1f}" x2="{x(t):.1f}" y2="{y(s) + 5:.1f}" '
                f'stroke="{colour}" stroke-width="1.5"/>'
            )
        ly = TOP + 14 + 18 * i
        parts.append(
            f'<line x1="{W - RIGHT + 10}" y1="{ly}" x2="{W - RIGHT + 40}" y2="{ly}" stroke="{colour}" '
            f'stroke-width="2"{dash_attr}/><text x="{W - RIGHT + 46}" y="{ly + 4}" font-size="11">'
            f"{name}</text>"
        )
    parts.append(
        f'<text x="{W - RIGHT + 10}" y="{TOP + 14 + 18 * len(curves) + 6}" font-size="10" fill="#555">'
        "| = censored (done or infra)</text></svg>"
    )
    return Markup("".join(parts))


def _at(curve: dict[str, Any], t: float) -> float:
    s = 1.0
    for time, value in zip(curve["times"], curve["survival"], strict=True):
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
