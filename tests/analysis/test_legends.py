"""Long configuration labels are read whole in every legend: the report's figures and the viewer's survival chart.

Twelve configurations named as a model matrix names them (agent, model, endpoint, settings) are drawn; the
saved figure must hold its legend, and every line of the viewer's legend must end inside its SVG's viewBox,
measured with DejaVu Sans (wider than most sans-serif faces a browser picks for system-ui).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pytest
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextPath
from PIL import Image

from staminad.analysis import figures
from staminad.analysis.labels import LEGEND_CHARS, wrap
from staminad.viewer.rows import Curve
from staminad.viewer.svg import survival_svg
from tests.helpers.reports import curve, report_of, row

NAMES = [f"mini-swe-agent:qwen3-coder-480b-a35b-instruct@shared-gpu-box-{i} R=3 detailed" for i in range(12)]
SVG = "{http://www.w3.org/2000/svg}"


def test_wrap_keeps_every_character_and_breaks_where_a_name_has_seams() -> None:
    """Lines of at most LEGEND_CHARS, broken after `:`/`@`/space first; a longer run is cut, nothing is lost."""
    for name in [*NAMES, "x" * 95, "reference R=1 detailed", ""]:
        lines = wrap(name)
        assert all(len(line) <= LEGEND_CHARS for line in lines)
        assert "".join(lines).replace(" ", "") == name.replace(" ", "")  # only the spaces at breaks go
    assert wrap(NAMES[0]) == ["mini-swe-agent:", "qwen3-coder-480b-a35b-instruct@", "shared-gpu-box-0 R=3 detailed"]
    assert wrap("reference R=1 detailed") == ["reference R=1 detailed"]


@pytest.mark.parametrize("draw", [figures.survival, figures.retry_budget], ids=["survival", "retry_budget"])
def test_a_saved_figure_holds_its_whole_legend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, draw: Any) -> None:
    """The legend's window extent, placed in the saved PNG (bbox_inches tight), lies inside the PNG's pixels."""
    report = report_of(
        configurations=[row("agent", 1, "detailed", 2.0, scenarios=3, n_turns=3) for _ in NAMES],
        retry_curves={n: [(0, 1.0 + i / 10, 0.1), (1, 2.0 + i / 10, 0.1)] for i, n in enumerate(NAMES)},
        survival={n: curve([1.0, 2.0], [0.7, 0.3]) for n in NAMES},
    )
    drawn: list[Any] = []
    monkeypatch.setattr(plt, "close", drawn.append)  # kept open to be measured; closed below
    made = draw(report, tmp_path)
    (fig,) = drawn
    monkeypatch.undo()
    try:
        with Image.open(next(p for p in made.paths if p.endswith(".png"))) as image:
            _legend_inside(fig, image)
    finally:
        plt.close(fig)


def _legend_inside(fig: Any, png: Image.Image) -> None:
    fig.set_dpi(300)  # measured as savefig laid it out: at its dpi, where text has its saved size
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = fig.axes[0].get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    shown = [t.replace("\n", "").replace(" ", "") for t in texts]
    assert len(shown) == 12 and all(t.startswith(n.replace(" ", "")) for t, n in zip(shown, NAMES, strict=True))
    assert all("\n" in t for t in texts)  # wrapped: one line each would be wider than the plot
    # Where savefig put the figure: its tight box (inches) padded by savefig.pad_inches, at 300 dpi.
    pad = plt.rcParams["savefig.pad_inches"]
    tight = fig.get_tightbbox(renderer)
    box = legend.get_window_extent(renderer).transformed(fig.dpi_scale_trans.inverted())  # inches
    left, right = (box.x0 - tight.x0 + pad) * 300, (box.x1 - tight.x0 + pad) * 300
    top, bottom = (tight.y1 + pad - box.y1) * 300, (tight.y1 + pad - box.y0) * 300  # from the image's top edge
    width, height = png.size
    assert abs(width - (tight.width + 2 * pad) * 300) <= 2 and abs(height - (tight.height + 2 * pad) * 300) <= 2
    assert 0 <= left < right <= width and 0 <= top < bottom <= height, (left, right, top, bottom, png.size)


def _width(text: str, size: float) -> float:
    return float(TextPath((0, 0), text, size=size, prop=FontProperties(family="DejaVu Sans")).get_extents().x1)


def test_the_viewers_legend_lines_all_end_inside_its_svg() -> None:
    """Every legend line of the viewer's survival chart, at its font size, ends inside the SVG's viewBox."""
    curves = [
        Curve(name=n, tau=4.0, times=[1.0, 2.0], survival=[0.7, 0.3 - i / 50], censored=[4.0])
        for i, n in enumerate(NAMES)
    ]
    root = ET.fromstring(str(survival_svg(curves)))
    _, _, vw, vh = (float(v) for v in root.attrib["viewBox"].split())
    legends = [t for t in root.iter(f"{SVG}text") if t.get("class") == "legend"]
    assert len(legends) == 13  # one per curve, and the censoring note
    shown = []
    for text in legends:
        size, x, y = float(text.attrib["font-size"]), float(text.attrib["x"]), float(text.attrib["y"])
        spans = text.findall(f"{SVG}tspan") or [text]
        lines = []
        for span in spans:
            y += float(span.get("dy", 0))
            line = span.text or ""
            lines.append(line)
            assert x + _width(line, size) <= vw and y + 0.25 * size <= vh, (line, vw, vh)
        shown.append("".join(lines))
    assert [s.replace(" ", "") for s in shown[:12]] == [n.replace(" ", "") for n in NAMES]
