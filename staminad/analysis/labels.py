"""How a configuration's name is broken into legend lines, the same in the report's figures and the viewer's.

A long name (agent, model, endpoint and settings) on one line made a legend wider than its plot: cut by the
viewer's fixed-size SVG, and shrinking a report figure to a third of a page. Wrapped, every label is read whole.
"""

from __future__ import annotations

import re

LEGEND_CHARS = 40  # characters a legend line holds


def wrap(name: str, width: int = LEGEND_CHARS) -> list[str]:
    """`name` in lines of at most `width` characters, broken after a space, `:`, `@` or `/` where it can be
    (a configuration's agent, model and settings), and within a longer run only where it must."""
    lines: list[str] = []
    line = ""
    for found in re.findall(r"[^ :@/]+[ :@/]?|[ :@/]", name):
        piece = str(found)
        if line and len(line + piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        while len(line + piece.rstrip()) > width:  # a run longer than a line is cut
            cut = width - len(line)
            lines.append(line + piece[:cut])
            line, piece = "", piece[cut:]
        line += piece
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


__all__ = ["LEGEND_CHARS", "wrap"]
