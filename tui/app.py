"""The Textual app: wires the link, the board and the screens together; owns no screen's logic.

Events from the link are folded into the board and handed to every screen on the stack, so the
one being watched redraws only what changed. Sweep figures and unknown scenario lists are refetched
at most a few times a second, never once per event. Requests the screens make go through `ask`,
which turns every daemon error into a one-line notification instead of a traceback.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from textual import work
from textual.app import App
from textual.binding import Binding

from protocol import Event, ListScenarios, ListSweeps
from protocol.client import ClientError
from protocol.messages import Message, RequestFor
from tui.board import Board
from tui.components.banner import Banner
from tui.link import Link, LinkDown
from tui.screens.base import MonitorScreen
from tui.screens.events import EventLogScreen
from tui.screens.overview import OverviewScreen

R = TypeVar("R", bound=Message)
BATCH_WINDOW = 0.005  # seconds the first event of a batch waits for the rest
REFETCH_EVERY = 1.0  # seconds between refetches of stale sweep figures (cheap rows move per event)


class StaminaApp(App[None]):
    TITLE = "stamina-tui"
    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [Binding("q", "quit", "Quit")]

    def __init__(self, socket_path: Path) -> None:
        super().__init__()
        self.socket_path = socket_path
        self.board = Board()
        self.link = Link(socket_path, self._on_status, self._on_event)
        self.connected, self.status_text = False, f"connecting to {socket_path}"
        self._stale_sweeps = False
        self._missing: set[str] = set()  # sweeps whose scenario list is needed
        self._inbox: list[Event] = []
        self._frozen = False
        self._refetching = False
        self.on_shown: Callable[[list[Event]], None] | None = None  # benchmarks: these events are on screen

    def on_mount(self) -> None:
        self.push_screen(OverviewScreen())
        self._keep_attached()
        self.set_interval(REFETCH_EVERY, self._maybe_refetch)

    @work(name="link", exclusive=True, group="link")
    async def _keep_attached(self) -> None:
        await self.link.run()

    # --- from the link ------------------------------------------------------------------------

    def _on_status(self, connected: bool, detail: str) -> None:
        self.connected = connected
        self.status_text = detail
        for screen in self.screen_stack:
            for banner in screen.query(Banner):
                banner.show(connected, self.status_text)
        if connected:
            self.resync()

    def _on_event(self, event: Event) -> None:
        # Events are applied in batches a few milliseconds long: applying each on its own costs more in
        # Textual's messages than the event itself, and a long window is latency every event pays. Screens
        # mark the rows a batch moved; the next frame (at most 60 a second) draws each marked row once.
        self._inbox.append(event)
        if len(self._inbox) == 1:
            self.set_timer(BATCH_WINDOW, self._apply_inbox)

    def _apply_inbox(self) -> None:
        inbox, self._inbox = self._inbox, []
        changes = []
        for event in inbox:
            change = self.board.apply(event)
            if change.line is None:
                continue  # replayed and already seen
            changes.append(change)
            if change.unknown_scenario or (event.kind == "sweep_started" and event.sweep not in self.board.scenarios):
                self._missing.add(event.sweep)
        if changes:
            self._stale_sweeps = True  # figures are refetched at most once per REFETCH_EVERY
            for screen in self._screens():
                screen.board_changed(changes)
        if self.on_shown is not None:
            self.call_after_refresh(self.on_shown, inbox)

    def _screens(self) -> list[MonitorScreen]:
        """The monitor screens on the stack (dialogs and help are not told about data), once mounted: one
        pushed but not yet composed has no widgets to update, and draws the board whole when it mounts."""
        return [screen for screen in self.screen_stack if isinstance(screen, MonitorScreen) and screen.is_mounted]

    # --- requests -----------------------------------------------------------------------------

    async def ask(self, message: RequestFor[R], quiet: bool = False) -> R | None:
        """A request to the daemon; None (and a notification unless quiet) if it failed."""
        try:
            return await self.link.request(message)
        except (ClientError, LinkDown) as exc:
            if not quiet:
                self.notify(str(exc), severity="error", timeout=6)
            return None

    def open_events(self, text_filter: str) -> None:
        """Push the event log, filtered on `text_filter` (what the screen it opens from shows)."""
        self.push_screen(EventLogScreen(text_filter))

    def need_scenarios(self, sweep: str) -> None:
        """Load (or reload) a sweep's scenario list at the next refetch."""
        self._missing.add(sweep)

    def resync(self) -> None:
        """Fresh snapshots after a (re)connection: sweeps, and the scenarios of every sweep shown."""
        self._stale_sweeps = True
        self.board.reattached()
        self._missing.update(self.board.scenarios)
        for screen in self._screens():
            screen.resync()

    def _maybe_refetch(self) -> None:
        # A refetch still running (a slow daemon, a busy machine) is left to finish, not cancelled and
        # restarted: restarting every tick would never finish one under load.
        if not self._refetching:
            self._refetching = True
            self._refetch()

    @work(group="refetch")
    async def _refetch(self) -> None:
        try:
            await self._refetch_now()
        finally:
            self._refetching = False

    async def _refetch_now(self) -> None:
        if not self.link.connected:
            return
        if self._stale_sweeps:
            self._stale_sweeps = False
            listed = await self.ask(ListSweeps(), quiet=True)
            if listed is not None:
                self.board.set_sweeps(listed)
                self._missing.update(s for s in self.board.sweeps if s not in self.board.scenarios)
                for screen in self._screens():
                    screen.sweeps_loaded()
        loaded = False
        while self._missing:
            sweep = self._missing.pop()
            scenarios = await self.ask(ListScenarios(sweep=sweep), quiet=True)
            if scenarios is not None:
                self.board.set_scenarios(scenarios)
                for screen in self._screens():
                    screen.scenarios_loaded(sweep)
                loaded = True
        if loaded and not self._frozen:
            # The widget tree and first snapshots live as long as the app: moving them out of the
            # collector's reach keeps full collections (50+ ms stalls under a fast event stream) short.
            gc.freeze()
            self._frozen = True


def make_app(socket_path: Path) -> StaminaApp:
    """The app factory the entry point, textual-serve and the tests share."""
    return StaminaApp(socket_path)


__all__ = ["StaminaApp", "make_app"]
