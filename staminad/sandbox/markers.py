"""Completion markers: the harness wrapper writes `<name>.json` when the harness ends.

One inotify instance watches every control directory; a waiter registers the marker it wants,
checks whether it already exists (the harness may have finished while nobody watched, e.g. while
the daemon was down), and otherwise sleeps until inotify reports the file or the bound expires.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import anyio
from asyncinotify import Inotify, Mask

from staminad.sandbox.bounded import MARKER, read_head


class Marker(dict[str, Any]):
    """What the wrapper recorded: exit, signal, started, ended; plus `seen_at` (when we noticed)."""


def read_marker(path: Path) -> Marker | None:
    try:
        data = json.loads(read_head(path, MARKER))
    except FileNotFoundError:
        return None
    except (ValueError, OSError) as exc:
        return Marker(exit=None, signal=None, error=f"unreadable marker: {exc}", seen_at=time.time())
    if not isinstance(data, dict):
        return Marker(exit=None, signal=None, error="unreadable marker: not a JSON object", seen_at=time.time())
    return Marker(data, seen_at=time.time())


class MarkerWatcher:
    """Waits for marker files with inotify. Run `serve` in a task group before calling `wait`."""

    def __init__(self) -> None:
        self._inotify = Inotify()
        self._watched: set[Path] = set()
        self._waiters: dict[Path, anyio.Event] = {}

    def close(self) -> None:
        self._inotify.close()

    def _watch(self, directory: Path) -> None:
        if directory not in self._watched:
            self._inotify.add_watch(directory, Mask.MOVED_TO | Mask.CLOSE_WRITE | Mask.CREATE)
            self._watched.add(directory)

    async def serve(self) -> None:
        async for event in self._inotify:
            if event.path is None:
                continue
            waiter = self._waiters.get(Path(event.path))
            if waiter is not None:
                waiter.set()

    async def wait(self, path: Path, timeout: float) -> Marker | None:
        """The marker at `path`, or None if it did not appear within `timeout` seconds."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._watch(path.parent)
        event = self._waiters.setdefault(path, anyio.Event())
        try:
            with anyio.move_on_after(timeout):
                while True:
                    marker = read_marker(path)
                    if marker is not None and "exit" in marker:
                        return marker
                    await event.wait()
                    event = self._waiters[path] = anyio.Event()
            return None
        finally:
            with contextlib.suppress(KeyError):
                del self._waiters[path]
