"""What an image build shares and shows: one build per tag for each user, and progress for every long step.

`tag_lock` takes an exclusive `flock` on a file named after the tag in this user's lock directory
(`$STAMINAD_IMAGE_LOCKS`, else `lockdir.default_dir("images")`: `/run/staminabench/images` for root, below the
user's state home otherwise; the user's alone, 0700, as for the port locks: a lock file another user could open
is one it could hold, and every build would wait on it). A second build of the same tag says `another build of
TAG is running (pid N); waiting` and waits; it then finds the image present. Builds of different users do not
wait on each other (each finds the tag missing and builds it; the import of the same content twice is harmless).
`step` says what runs and for how long, every few seconds, with the last line a tool printed (`Tail`), so a build
of several minutes is never a silent wait.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from staminad.sandbox.lockdir import default_dir, open_lock_file, open_private_dir

LOCK_DIR_ENV = "STAMINAD_IMAGE_LOCKS"
EVERY = 5.0  # seconds between progress lines of one step
MAX_LINE = 160  # a tool's line as shown


def say_stderr(line: str) -> None:
    print(f"image build: {line}", file=sys.stderr, flush=True)


def lock_dir() -> Path:
    """This user's directory of the image build locks (see the module)."""
    if override := os.environ.get(LOCK_DIR_ENV):
        return Path(override)
    return default_dir("images")


def lock_name(tag: str) -> str:
    """The lock file of a tag: `staminabench/sandbox:abc` -> `staminabench_sandbox_abc.lock`."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", tag) + ".lock"


def holder(fd: int) -> str:
    """The pid the lock file names (its holder wrote it), or `?`."""
    with contextlib.suppress(OSError):
        text = os.pread(fd, 32, 0).decode(errors="replace").strip()
        if text.isdigit():
            return text
    return "?"


@contextlib.contextmanager
def tag_lock(tag: str, say: Callable[[str], None] = say_stderr) -> Iterator[None]:
    """Hold the machine-wide build lock of `tag`; wait (saying so, with the holder's pid) while another has it."""
    dir_fd = open_private_dir(lock_dir())
    try:
        fd = open_lock_file(dir_fd, lock_name(tag))
    finally:
        os.close(dir_fd)
    if fd is None:
        raise OSError(f"the image lock {lock_name(tag)} in {lock_dir()} is not a regular file of this user")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"another build of {tag} is running (pid {holder(fd)}); waiting")
            start = time.monotonic()
            fcntl.flock(fd, fcntl.LOCK_EX)
            say(f"the other build of {tag} ended after {time.monotonic() - start:.0f}s of waiting")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # drops the flock


class Tail:
    """A tool's output stream read on a thread: its last non-empty line now, all of it (bounded) at the end."""

    def __init__(self, stream: IO[bytes], keep: int = 64 * 1024) -> None:
        self.last = ""
        self._kept = bytearray()
        self._keep = keep
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            self._kept += raw
            del self._kept[: max(0, len(self._kept) - self._keep)]
            line = raw.decode(errors="replace").strip()
            if line:
                self.last = line[:MAX_LINE]

    def text(self, timeout: float = 10) -> str:
        """Everything kept, once the stream ended (or after `timeout`)."""
        self._thread.join(timeout)
        return self._kept.decode(errors="replace")


@contextlib.contextmanager
def step(
    say: Callable[[str], None], what: str, last: Callable[[], str] | None = None, every: float = EVERY
) -> Iterator[None]:
    """Say `what` when it starts, then every `every` seconds with the time so far (and `last()`, a tool's last
    line), and its time once it ends."""
    start = time.monotonic()
    stop = threading.Event()
    say(f"{what}...")

    def tick() -> None:
        while not stop.wait(every):
            tail = last() if last is not None else ""
            say(f"{what}: {time.monotonic() - start:.0f}s" + (f" - {tail}" if tail else ""))

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
        say(f"{what}: ended after {time.monotonic() - start:.0f}s")


__all__ = ["LOCK_DIR_ENV", "Tail", "lock_dir", "lock_name", "say_stderr", "step", "tag_lock"]
