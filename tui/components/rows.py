"""RowTable: a scrolling table that redraws only the rows that changed.

Textual's DataTable re-renders every visible cell after any single-cell update, which costs a core
at a few hundred events per second. Here each row is rendered once into a cached strip, built from its
cells' cached pieces (`tui.components.cells`); updating rows drops their strips and repaints just their
lines, in one refresh. It has what the monitor needs and no more: a pinned
header, a row cursor (keys and mouse), Enter to select, appending with a bounded length. On a narrow
terminal it drops the columns it was told are optional, in the order given, then shrinks one named
column, so the ones that matter stay readable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.components.cells import Cell, CellCache

GROW = 64
MIN_LAST = 12  # the last column keeps at least this many cells before optional columns go
MIN_SHRUNK = 12


class RowTable(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    RowTable { height: 1fr; background: $surface; }
    RowTable > .rowtable--header { text-style: bold; background: $panel; color: $text; }
    RowTable > .rowtable--cursor { background: $accent 50%; text-style: bold; }
    RowTable > .rowtable--odd { background: $boost; }
    """
    COMPONENT_CLASSES = {"rowtable--header", "rowtable--cursor", "rowtable--odd"}
    BINDINGS = [
        Binding("up", "cursor(-1)", show=False),
        Binding("down", "cursor(1)", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
        Binding("home", "jump(0)", show=False),
        Binding("end", "jump(-1)", show=False),
        Binding("enter", "select", show=False),
    ]

    class Highlighted(Message):
        def __init__(self, table: RowTable, key: str) -> None:
            super().__init__()
            self.table, self.key = table, key

        @property
        def control(self) -> RowTable:
            return self.table

    class Selected(Highlighted):
        pass

    def __init__(
        self,
        columns: Sequence[tuple[str, int]],
        *,
        id: str | None = None,
        optional: Sequence[int] = (),
        shrink: int | None = None,
    ) -> None:
        """`columns` are (label, width); the last column takes whatever width is left.

        When the view is too narrow, the `optional` columns (indices) are hidden in that order, then the
        `shrink` column is narrowed; `get_row_at` still returns every cell.
        """
        super().__init__(id=id)
        self.columns = list(columns)
        self._optional, self._narrowed = tuple(optional), shrink
        self._shown: list[tuple[int, int]] = [(i, w) for i, (_, w) in enumerate(self.columns)]  # (index, width)
        self._keys: list[str] = []
        self._cells: dict[str, tuple[Cell, ...]] = {}
        self._index: dict[str, int] = {}
        self._strips: dict[str, Strip] = {}
        self._styles: dict[str, Style] = {}
        self._pieces = CellCache()
        self._width = 0
        self.cursor_row = 0

    # --- data ---------------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._keys)

    @property
    def cursor_key(self) -> str | None:
        return self._keys[self.cursor_row] if self._keys else None

    def get_row_at(self, index: int) -> tuple[Cell, ...]:
        return self._cells[self._keys[index]]

    def set_rows(self, rows: Iterable[tuple[str, Sequence[Cell]]]) -> None:
        """Replace every row; the cursor stays on the same key when it is still there."""
        keep = self.cursor_key
        self._keys, self._cells, self._strips = [], {}, {}
        for key, cells in rows:
            self._keys.append(key)
            self._cells[key] = tuple(cells)
        self._reindex()
        self.cursor_row = (
            self._index.get(keep, min(self.cursor_row, max(len(self._keys) - 1, 0))) if keep is not None else 0
        )
        self._resize()
        self.refresh()
        self._highlighted()

    def update_row(self, key: str, cells: Sequence[Cell]) -> bool:
        """Change one row in place and repaint just that line; False if there is no such row."""
        return not self.update_rows([(key, cells)])

    def update_rows(self, rows: Iterable[tuple[str, Sequence[Cell]]]) -> list[str]:
        """Change rows in place and repaint just their lines, in one refresh: a burst of events moves many
        rows, and each refresh of a widget costs more than the line it marks. The keys with no such row."""
        top, height = int(self.scroll_offset.y), self.size.height
        width = max(self.virtual_size.width, self.size.width)
        lines, missing = [], []
        for key, row in rows:
            index = self._index.get(key)
            if index is None:
                missing.append(key)
                continue
            cells = tuple(row)
            if self._cells[key] != cells:
                self._cells[key] = cells
                self._strips.pop(key, None)
                if 0 < index + 1 - top < height:  # a line out of view is drawn when it scrolls in
                    lines.append(Region(0, index + 1 - top, width, 1))
        if lines:
            self.refresh(*lines)
        return missing

    def append(self, rows: Iterable[tuple[str, Sequence[Cell]]], limit: int) -> None:
        """Add rows at the end, dropping the oldest beyond `limit` (in batches, so appending stays cheap).

        A cursor on the last row follows the new rows (like `tail -f`); one elsewhere stays put.
        """
        follow = self.cursor_row >= len(self._keys) - 1
        for key, cells in rows:
            self._keys.append(key)
            self._cells[key] = tuple(cells)
            self._index[key] = len(self._keys) - 1
        if len(self._keys) > limit + limit // 10:
            for old in self._keys[: len(self._keys) - limit]:
                self._cells.pop(old, None)
                self._strips.pop(old, None)
            dropped = len(self._keys) - limit
            self._keys = self._keys[dropped:]
            self.cursor_row = max(self.cursor_row - dropped, 0)
            self._reindex()
            self.refresh()
        self._resize()
        if follow:
            self.move_cursor(len(self._keys) - 1)

    def _reindex(self) -> None:
        self._index = {k: i for i, k in enumerate(self._keys)}

    def _resize(self) -> None:
        # Grown in steps of GROW rows: a new virtual size relayouts the whole screen, so a log that gains
        # rows every batch would pay that on every batch; the few blank rows below the end are harmless.
        rows = len(self._keys) + 1
        if rows > self.size.height:  # only a list taller than the view scrolls, so only then may it be padded
            rows = -(-rows // GROW) * GROW
        size = Size(sum(w + 1 for _, w in self._shown), rows)
        if size != self.virtual_size:
            self.virtual_size = size

    # --- cursor -------------------------------------------------------------------------------

    def move_cursor(self, row: int) -> None:
        if not self._keys:
            return
        row = max(0, min(row, len(self._keys) - 1))
        old, self.cursor_row = self.cursor_row, row
        self.refresh_line(old + 1)
        self.refresh_line(row + 1)
        top, visible = int(self.scroll_offset.y), max(self.size.height - 1, 1)
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + visible:
            self.scroll_to(y=row - visible + 1, animate=False)
        if old != row:
            self._highlighted()

    def _highlighted(self) -> None:
        if self._keys:
            self.post_message(self.Highlighted(self, self._keys[self.cursor_row]))

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor_row + step)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor_row + direction * max(self.size.height - 2, 1))

    def action_jump(self, row: int) -> None:
        self.move_cursor(row if row >= 0 else len(self._keys) - 1)

    def action_select(self) -> None:
        if self._keys:
            self.post_message(self.Selected(self, self._keys[self.cursor_row]))

    def on_click(self, event: events.Click) -> None:
        row = event.y - 1 + int(self.scroll_offset.y)
        if event.y >= 1 and 0 <= row < len(self._keys):
            if row == self.cursor_row and event.chain >= 2:
                self.action_select()
            self.move_cursor(row)

    def on_resize(self) -> None:
        self._resize()  # whether the list needs padding depends on the height it got

    def on_focus(self) -> None:
        self.refresh_line(self.cursor_row + 1)

    # --- rendering ----------------------------------------------------------------------------

    def _layout(self, width: int) -> None:
        """Which columns show at `width`, and how wide: optional ones go first, then `shrink` narrows."""
        widths = [w for _, w in self.columns]
        shown = list(range(len(self.columns)))

        def need() -> int:
            return sum(widths[i] + 1 for i in shown[:-1]) + MIN_LAST

        for index in self._optional:
            if need() <= width:
                break
            shown.remove(index)
        if self._narrowed is not None and need() > width:
            widths[self._narrowed] = max(MIN_SHRUNK, widths[self._narrowed] - (need() - width))
        self._shown = [(i, widths[i]) for i in shown]

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if width != self._width:
            self._width, self._strips = width, {}
            self._layout(width)
        if y == 0:
            labels = [(self.columns[i][0], w) for i, w in self._shown]
            header = Text.assemble(*((f"{label[:w]:<{w}} ", "") for label, w in labels[:-1]), labels[-1][0])
            return self._strip(header, self._style("rowtable--header"))
        index = y - 1 + int(self.scroll_offset.y)
        if index >= len(self._keys):
            return Strip.blank(width, self._style(""))
        key = self._keys[index]
        if index == self.cursor_row:
            return self._row_strip(self._cells[key], self._style("rowtable--cursor"))
        strip = self._strips.get(key)
        if strip is None:
            base = self._style("rowtable--odd" if index % 2 else "")
            strip = self._strips[key] = self._row_strip(self._cells[key], base)
        return strip

    def _style(self, component: str) -> Style:
        """The widget's style ("") or a component's, kept until the styles change: Textual recomputes them on
        every call after a refresh, and a busy table refreshes every frame."""
        style = self._styles.get(component)
        if style is None:
            style = self._styles[component] = self.get_component_rich_style(component) if component else self.rich_style
        return style

    def _row_strip(self, cells: tuple[Cell, ...], style: Style) -> Strip:
        """A row's line from its cells' cached pieces (see `tui.components.cells`), cut or padded to the view."""
        segments: list[Segment] = []
        length, last = 0, len(self._shown) - 1
        console = self.app.console
        for i, (index, w) in enumerate(self._shown):
            if index >= len(cells):
                break
            piece, cells_wide = self._pieces.render(cells[index], w if i < last else 0, style, console)
            segments.extend(piece)
            length += cells_wide
        if length > self._width:
            return Strip(segments, length).crop(0, self._width)
        if length < self._width:
            segments.append(Segment(" " * (self._width - length), style))
        return Strip(segments, self._width)

    def _strip(self, text: Text, style: Style) -> Strip:
        segments = list(text.render(self.app.console))
        return Strip(segments).adjust_cell_length(self._width, style).apply_style(style)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips, self._styles = {}, {}
        self._pieces.clear()


__all__ = ["Cell", "RowTable"]
