"""The `?` dialog: every key binding of the screen it was opened from, with what it does."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

GENERAL = [("home/end", "first / last row"), ("?", "this help"), ("e", "event log"), ("escape", "back"), ("q", "quit")]


class Help(ModalScreen[None]):
    DEFAULT_CSS = """
    Help { align: center middle; }
    Help > VerticalScroll { width: 72; height: auto; max-height: 80%; border: thick $primary; background: $surface;
                            padding: 1 2; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def __init__(self, title: str, bindings: list[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text, self.bindings = title, bindings

    def compose(self) -> ComposeResult:
        lines = [f"[b]{self.title_text}[/b]", ""]
        rows: dict[str, str] = {}
        for key, text in [*self.bindings, *GENERAL]:
            rows.setdefault(key, text)  # a key the screen names itself wins over the general one
        width = max(len(key) for key in rows)
        lines += [f"  [b]{key:<{width}}[/b] {text}" for key, text in rows.items()]
        lines += ["", "The monitor reconnects by itself when staminad restarts."]
        with VerticalScroll():
            yield Static("\n".join(lines))
