"""The connection banner: says plainly whether the monitor is attached to a daemon, and what to do if not."""

from __future__ import annotations

from textual.widgets import Static


class Banner(Static):
    DEFAULT_CSS = """
    Banner { height: 1; padding: 0 1; background: $success-darken-2; color: $text; }
    Banner.down { background: $error; }
    """

    def show(self, connected: bool, detail: str) -> None:
        self.set_class(not connected, "down")
        if connected:
            self.update(f"● {detail}")
        else:
            self.update(f"✕ {detail} - retrying")
