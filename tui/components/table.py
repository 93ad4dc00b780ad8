"""A row-cursor DataTable where Home and End move the cursor to the first and last row.

Textual's DataTable binds Home/End to horizontal scrolling when its cursor is a row, so on a long
list End did nothing anyone would expect; the screens that use DataTable use this one instead.
"""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.widgets import DataTable


class RowCursorTable(DataTable[Any]):
    BINDINGS = [
        Binding("home", "first_row", "First row", show=False),
        Binding("end", "last_row", "Last row", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)

    def action_first_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=0)

    def action_last_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=self.row_count - 1)


__all__ = ["RowCursorTable"]
