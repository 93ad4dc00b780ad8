"""Table cells rendered once: a cell's segments at a width over a row's style, kept by what the cell shows.

An event changes a cell or two of a monitor row (a phase, an attempt, a clock) and leaves the rest, and
the same words (phases, statuses, failure kinds, seeds) recur on every row. `RowTable` builds a line from
these pieces, so a changed row costs the rendering of its new cells, and a cell seen before costs a lookup.
Each piece is exactly what rendering the cell inside the whole line gave: truncated (with an ellipsis) and
padded to its column, then one space, under the row's style.
"""

from __future__ import annotations

from collections.abc import Hashable

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

Cell = str | Text
LIMIT = 8192  # pieces kept; a log of unique lines would otherwise grow the cache without end


def cell_key(cell: Cell) -> Hashable:
    """What a cell shows, as a dict key: its text, and for rich text its style and spans too."""
    if isinstance(cell, str):
        return cell
    return (cell.plain, cell.style, tuple(cell.spans))


class CellCache:
    """Rendered cells of one table, by (what the cell shows, column width, row style)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._pieces: dict[tuple[Hashable, int, Style], tuple[list[Segment], int]] = {}

    def clear(self) -> None:
        self._pieces.clear()

    def render(self, cell: Cell, width: int, style: Style, console: Console) -> tuple[list[Segment], int]:
        """The cell over `style`, cut or padded to `width` and a separating space (`width` 0: the last column,
        as long as it is; the line it ends is cut to the view), and how many cells wide that is."""
        key = (cell_key(cell), width, style)
        piece = self._pieces.get(key)
        if piece is None:
            if len(self._pieces) >= self._limit:
                self._pieces.clear()
            text = cell.copy() if isinstance(cell, Text) else Text(str(cell))
            if width:
                text.truncate(width, overflow="ellipsis", pad=True)
                text.append(" ")
            line = Text()  # as a span of a line, as in the whole row: `Text.render` drops a lone text's own style
            line.append_text(text)
            segments = list(Segment.apply_style(line.render(console), style))
            piece = self._pieces[key] = (segments, Segment.get_line_length(segments))
        return piece


__all__ = ["Cell", "CellCache", "cell_key"]
