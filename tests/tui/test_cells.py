"""Cached table cells: a piece is what the cell gave inside its whole line, and is reused only for the same cell."""

from __future__ import annotations

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from tui.components.cells import CellCache

ROW = Style(bgcolor="blue")


def _line(cells: list[Text], width: int) -> list[Segment]:
    """The reference: the cells truncated, padded and joined into one line, rendered once, under the row style."""
    out = Text()
    for cell in cells:
        text = cell.copy()
        text.truncate(width, overflow="ellipsis", pad=True)
        text.append(" ")
        out.append_text(text)
    return list(Segment.apply_style(out.render(Console()), ROW))


def test_a_styled_cell_keeps_its_style_and_its_width() -> None:
    """A cell with a style of its own shows it (a lone Text renders without it), cut to its column plus a space."""
    cache, console = CellCache(), Console()
    cells = [Text("infra_failed", style="bold red"), Text("a very long configuration name", style="green")]
    pieces = [cache.render(cell, 10, ROW, console) for cell in cells]
    assert [length for _, length in pieces] == [11, 11]
    joined = [segment for piece, _ in pieces for segment in piece]
    assert list(Segment.simplify(joined)) == list(Segment.simplify(_line(cells, 10)))


def test_the_last_column_is_as_long_as_its_text() -> None:
    """Width 0 (the last column): the text whole, no padding; the table cuts the line to the view."""
    piece, length = CellCache().render("PPRF", 0, ROW, Console())
    assert length == 4 and "".join(s.text for s in piece) == "PPRF"


def test_a_piece_is_reused_only_for_the_same_cell() -> None:
    """Equal text, style and row style give the cached piece; another style or row style renders anew."""
    cache, console = CellCache(), Console()
    first = cache.render(Text("testing", style="cyan"), 20, ROW, console)
    assert cache.render(Text("testing", style="cyan"), 20, ROW, console) is first
    assert cache.render(Text("testing", style="red"), 20, ROW, console) is not first
    assert cache.render(Text("testing", style="cyan"), 20, Style(bgcolor="black"), console) is not first


def test_the_cache_stays_bounded() -> None:
    """Unique cells (an event log's lines) never grow it past its limit."""
    cache, console = CellCache(limit=8), Console()
    for i in range(50):
        cache.render(f"line {i}", 0, ROW, console)
    assert len(cache._pieces) <= 8
