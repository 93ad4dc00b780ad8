"""What every figure shares (see `figures`): the house style, the caption's scope line, and writing a figure out.

The style: Okabe-Ito colours (safe for colour-blind readers), markers and line styles combined so that
curves stay apart in greyscale (`style`), editable text in the vector files (`STYLE`), integer ticks on
turn axes. Writing out: the legend outside the axes with wrapped labels, then PDF, SVG and a 300 dpi PNG,
never through a symbolic link (`open_output`), gathered as a `Figure` with its caption into a
`FigureSet` that renders the report's figure section (Markdown or LaTeX).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import msgspec
from matplotlib.ticker import MaxNLocator

from staminad.analysis.labels import wrap
from staminad.analysis.reportdata import Report

COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINES = ("-", "--", ":", "-.")
FORMATS = ("pdf", "svg", "png")
STYLE = {
    "svg.fonttype": "none",
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "font.size": 9,
    "axes.titlesize": 10,
    "legend.fontsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "savefig.dpi": 300,
    "font.family": "DejaVu Sans",
}


class Figure(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    caption: str
    paths: tuple[str, ...]


class FigureSet(msgspec.Struct, kw_only=True):
    figures: list[Figure] = msgspec.field(default_factory=list)
    skipped: list[str] = msgspec.field(default_factory=list)  # one line per figure left out, saying why

    def paths(self) -> list[Path]:
        return [Path(p) for f in self.figures for p in f.paths]

    def markdown(self) -> str:
        """The report's figure section: each figure embedded (PNG) with links to its vector files."""
        out = ["## Figures", ""]
        for f in self.figures:
            png = next(Path(p).name for p in f.paths if p.endswith(".png"))
            vectors = " · ".join(
                f"[{Path(p).suffix[1:].upper()}]({Path(p).name})" for p in f.paths if not p.endswith(".png")
            )
            out += [f"![{f.name}]({png})", "", f"*{f.caption}* ({vectors})", ""]
        out += [f"- {line}" for line in self.skipped]
        return "\n".join(out).rstrip() + "\n"

    def latex(self) -> str:
        """The figures as LaTeX floats (PDF, needs `\\usepackage{graphicx}`), each with its caption and a label."""
        from staminad.analysis.latex import esc

        out = ["% StaminaBench figures; needs \\usepackage{graphicx}", ""]
        for f in self.figures:
            pdf = next(Path(p).name for p in f.paths if p.endswith(".pdf"))
            out += [
                r"\begin{figure}[t]",
                r"\centering",
                rf"\includegraphics[width=\linewidth]{{{pdf}}}",
                rf"\caption{{{esc(f.caption)}}}",
                rf"\label{{fig:{f.name.replace('_', '-')}}}",
                r"\end{figure}",
                "",
            ]
        out += [f"% {line}" for line in self.skipped]
        return "\n".join(out).rstrip() + "\n"


def open_output(path: Path) -> IO[bytes]:
    """`path` opened to be written over, never through a symbolic link (that raises OSError: ELOOP)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666), "wb")


def style(i: int) -> dict[str, Any]:
    """The i-th curve's colour, marker and line style. Each round of 8 colours shifts the line style by one and
    the marker by three, so colour and line style (all a survival curve shows) differ for any two of the first
    32 curves, and the three together for any two of the first 64."""
    lap = i // len(COLOURS)
    return {
        "color": COLOURS[i % len(COLOURS)],
        "marker": MARKERS[(i + 3 * lap) % len(MARKERS)],
        "linestyle": LINES[(i + lap) % len(LINES)],
    }


def scope(report: Report) -> str:
    """N scenarios, turns and R for the caption line."""
    cs = report.configurations
    ns = sorted({c.scenarios for c in cs})
    turns = sorted({c.n_turns for c in cs})
    rs = sorted({c.retries for c in cs})
    n = f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"
    t = ", ".join(str(x) for x in turns)
    changes = ", ".join(str(x) for x in turns)
    return (
        f"K = {n} scored scenarios per configuration, turns = {t} (turn 0 + {changes} changes), "
        f"R = {', '.join(str(r) for r in rs)}"
    )


def save(fig: Any, out: Path, name: str, caption: str, legend: bool = True) -> Figure:
    handles, labels = fig.axes[0].get_legend_handles_labels() if legend and fig.axes else ([], [])
    if handles:  # outside the axes, each label wrapped (`labels.wrap`) and the whole kept in by bbox_inches="tight"
        fig.axes[0].legend(
            handles,
            ["\n".join(wrap(label)) for label in labels],
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0,
            frameon=False,
        )
    # The caption is not drawn: it goes beside the image (report.md, report.tex, the site), where a paper sets it.
    paths = []
    for fmt in FORMATS:
        p = out / f"{name}.{fmt}"
        with open_output(p) as fh:
            fig.savefig(fh, format=fmt, dpi=300, bbox_inches="tight", metadata={"Date": None} if fmt == "pdf" else None)
        paths.append(str(p))
    plt.close(fig)
    return Figure(name=name, caption=caption, paths=tuple(paths))


def turn_axis(axis: Any) -> None:
    axis.set_major_locator(MaxNLocator(integer=True))


__all__ = ["FORMATS", "STYLE", "Figure", "FigureSet", "open_output", "save", "scope", "style", "turn_axis"]
