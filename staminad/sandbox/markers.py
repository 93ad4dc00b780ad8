"""Completion markers: the harness wrapper writes `<name>.json` when the harness ends.

One inotify instance watches every control directory; a waiter registers the marker it wants,
checks whether it already exists (the harness may have finished while nobody watched, e.g. while
the daemon was down), and otherwise sleeps until inotify reports the file or the bound expires.

Every marker, however it was read (a host file here, the in-container launcher's answer for a volume
sandbox), goes through `check_marker`: on the local runtime an agent can write its own control
directory, so a marker with a field of the wrong type or out of range (an exit of 10**23, a signal
no kernel sends, an `ended` of 1e999 or before `started`) is an unusable one, which the engine records
as the harness's crash of that attempt, exactly like an unreadable one, and nothing from it reaches the store.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import time
from pathlib import Path
from typing import Any

import anyio
from asyncinotify import Inotify, Mask

from staminad.sandbox.bounded import MARKER, read_head
from staminad.sandbox.offloop import quick


class Marker(dict[str, Any]):
    """What the wrapper recorded: exit, signal, started, ended; plus `seen_at` (when we noticed)."""


MAX_EXIT = 255  # an exit status is one byte
MAX_SIGNAL = 127  # the wrapper's signal is its shell's status less 128
MAX_TIME = 1e10  # Unix seconds (the year 2286): a later or non-finite `started`/`ended` is no time at all


def _bad_field(data: dict[str, Any]) -> str | None:
    """What is wrong with the fields the engine reads, or None when all are usable."""
    for key, top in (("exit", MAX_EXIT), ("signal", MAX_SIGNAL)):
        value = data.get(key)
        if value is not None and (type(value) is not int or not 0 <= value <= top):
            return f"{key} {_shown(value)} is not null or a whole number in 0..{top}"
    for key in ("started", "ended"):
        value = data.get(key)
        if value is not None and (
            type(value) not in (int, float) or not math.isfinite(value) or not 0 <= value <= MAX_TIME
        ):
            return f"{key} {_shown(value)} is not null or a time in Unix seconds"
    started, ended = data.get("started"), data.get("ended")
    if started is not None and ended is not None and ended < started:  # a negative harness time
        return f"ended {_shown(ended)} is before started {_shown(started)}"
    return None


def _shown(value: object) -> str:
    """A field's value for the one-line reason, cut short (a string may be 64 KiB long)."""
    if isinstance(value, str | int | float):  # bool too; as JSON writes it (Infinity, NaN, true)
        text = json.dumps(value)
    else:
        text = f"(a JSON {'object' if isinstance(value, dict) else 'array'})"
    return text if len(text) <= 40 else text[:37] + "..."


def check_marker(data: object, seen_at: float) -> Marker:
    """The marker `data` (parsed JSON) makes, noticed at `seen_at`: as written when every field the engine
    reads is usable (the wrapper's always are), else one saying why it is not. An object without `exit` is
    kept as it is: not a marker yet, which the waiters go on waiting past."""
    if not isinstance(data, dict):
        return Marker(exit=None, signal=None, error="unreadable marker: not a JSON object", seen_at=seen_at)
    if "exit" in data and (why := _bad_field(data)) is not None:
        return Marker(exit=None, signal=None, error=f"unusable marker: {why}", seen_at=seen_at)
    return Marker(data, seen_at=seen_at)


def read_marker(path: Path) -> Marker | None:
    try:
        data = json.loads(read_head(path, MARKER))
    except FileNotFoundError:
        return None
    except (ValueError, OSError, RecursionError) as exc:  # RecursionError: 64 KiB of `[[[[...`
        return Marker(exit=None, signal=None, error=f"unreadable marker: {exc}", seen_at=time.time())
    return check_marker(data, time.time())


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
        if path.parent not in self._watched:  # waited on every few seconds: the directory is made once
            await quick(functools.partial(path.parent.mkdir, parents=True, exist_ok=True))
        self._watch(path.parent)
        event = self._waiters.setdefault(path, anyio.Event())
        try:
            # Read on the loop: one small file, and a thread hop on the way would add a GIL handoff to the
            # latency measured (`seen_at` is taken as it is read).
            marker = read_marker(path)  # looked at once, even with no time to wait
            with anyio.move_on_after(timeout):
                while marker is None or "exit" not in marker:
                    await event.wait()
                    event = self._waiters[path] = anyio.Event()
                    marker = read_marker(path)
                return marker
            return None
        finally:
            with contextlib.suppress(KeyError):
                del self._waiters[path]
