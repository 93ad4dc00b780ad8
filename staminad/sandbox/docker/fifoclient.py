"""The host side of a container's launcher (`launcher.py`): requests into its FIFO, answers out of its replies.

A request is one JSON line written with O_NONBLOCK into control/launch.fifo: the open fails with
ENXIO when no launcher reads it (the container is stopped or gone, or the launcher died), which
`post` reports as False so the caller falls back to `docker exec`. An answer is awaited with inotify
on control/replies, bounded; while it is awaited the caller's `check` runs every CHECK_INTERVAL, so
a container that was paused or removed after the request was written is known in a second, not
after the whole bound (a frozen launcher holds the FIFO open but never answers).
"""

from __future__ import annotations

import errno
import json
import os
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from asyncinotify import Inotify, Mask

from staminad.sandbox.base import InsideFailure, SandboxError
from staminad.sandbox.bounded import read_head

REQUEST_LIMIT = 4096  # the launcher's own bound (PIPE_BUF: a line is written whole or not at all)
REPLY_LIMIT = 64 * 1024
CHECK_INTERVAL = 1.0

Check = Callable[[], Awaitable[None]]


class Channel:
    """Requests to one container's launcher through its control directory on the host."""

    def __init__(self, host_control: Path) -> None:
        self.fifo = host_control / "launch.fifo"
        self.replies = host_control / "replies"

    def reading(self) -> bool:
        """Whether a launcher holds the FIFO open now."""
        try:
            fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return False
        os.close(fd)
        return True

    def post(self, op: str, args: dict[str, Any], rid: str | None = None) -> bool:
        """Write one request; False when no launcher reads the FIFO (or it is full: the launcher is stuck)."""
        req: dict[str, Any] = {"op": op, "args": args}
        if rid is not None:
            req["id"] = rid
        line = json.dumps(req).encode() + b"\n"
        if len(line) > REQUEST_LIMIT:
            return False
        try:
            fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno in (errno.ENXIO, errno.ENOENT):
                return False
            raise SandboxError(f"launcher FIFO {self.fifo}: {exc}", "engine_error") from None
        try:
            return os.write(fd, line) == len(line)
        except BlockingIOError:
            return False
        finally:
            os.close(fd)

    async def call(self, op: str, args: dict[str, Any], timeout: float, check: Check) -> bytes | None:
        """The launcher's answer to one request, as it wrote it (`replies.decode` reads it); None when no launcher
        reads (fall back to `docker exec`).

        `check` raises SandboxError when the container is no longer usable; it runs while the answer is late.
        """
        rid = secrets.token_hex(8)
        reply = self.replies / f"{rid}.json"
        self.replies.mkdir(parents=True, exist_ok=True)
        with Inotify() as inotify:
            inotify.add_watch(self.replies, Mask.MOVED_TO | Mask.CLOSE_WRITE)
            if not self.post(op, args, rid):
                return None
            try:
                with anyio.fail_after(timeout):
                    while not reply.exists():
                        with anyio.move_on_after(CHECK_INTERVAL) as late:
                            async for event in inotify:
                                if event.path is not None and event.path.name == reply.name:
                                    break
                        if late.cancelled_caught and not reply.exists():
                            await check()
            except TimeoutError:  # it runs in the container, beside the agent's processes: judged (`InsideFailure`)
                raise InsideFailure(f"the sandbox launcher did not answer {op} within {timeout:.0f} s") from None
        try:
            return read_head(reply, REPLY_LIMIT)
        except OSError as exc:
            raise SandboxError(f"unreadable launcher answer to {op}: {exc}", "engine_error") from None
        finally:
            reply.unlink(missing_ok=True)
