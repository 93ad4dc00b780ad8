"""What an image build shares and shows: one build per tag machine-wide, and progress for every long step.

`tag_lock` takes an exclusive `flock` on a file named after the tag in a machine-wide directory
(`$STAMINAD_IMAGE_LOCKS`, else `/run/staminabench/images` where `/run/staminabench` exists, else
`/tmp/staminabench-images`; made world-writable and sticky like `/tmp`, a symlink in its place refused). A
second build of the same tag says `another build of TAG is running (pid N); waiting` and waits; it then finds
the image present. `step` says what runs and for how long, every few seconds, with the last line a tool
printed (`Tail`), so a build of several minutes is never a silent wait.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

LOCK_DIR_ENV = "STAMINAD_IMAGE_LOCKS"
RUN_DIR = Path("/run/staminabench")
TMP_LOCK_DIR = Path("/tmp/staminabench-images")
EVERY = 5.0  # seconds between progress lines of one step
MAX_LINE = 160  # a tool's line as shown


def say_stderr(line: str) -> None:
    print(f"image build: {line}", file=sys.stderr, flush=True)


def lock_dir() -> Path:
    """The machine-wide directory of the image build locks (see the module)."""
    if override := os.environ.get(LOCK_DIR_ENV):
        return Path(override)
    if RUN_DIR.is_dir() and os.access(RUN_DIR, os.W_OK):
        return RUN_DIR / "images"
    return TMP_LOCK_DIR


def _open_dir(path: Path) -> int:
    """A descriptor of the lock directory, created world-writable and sticky if missing; a symlink is refused."""
    if not os.path.lexists(path):
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o1777, parents=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    info = os.fstat(fd)
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != 0o1777:
        os.fchmod(fd, 0o1777)  # every user's builds create their lock files here
    elif info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
        os.close(fd)
        raise OSError(f"image lock directory {path} is world-writable without the sticky bit: chmod 1777 it")
    return fd


def lock_name(tag: str) -> str:
    """The lock file of a tag: `staminabench/sandbox:abc` -> `staminabench_sandbox_abc.lock`."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", tag) + ".lock"


def _open_lock(dir_fd: int, name: str) -> tuple[int, bool]:
    """(a descriptor of the lock file, whether it is writable), made if missing; never through a symlink."""
    for flags in (os.O_RDWR, os.O_RDONLY):  # another user's file: read-only is enough to flock it
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                made = os.open(
                    name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd
                )
                os.fchmod(made, 0o644)
                return made, True
            continue
        except PermissionError:
            continue
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"image lock {name} is not a regular file")
        return fd, flags == os.O_RDWR
    raise OSError(f"cannot open the image lock {name}")


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
    dir_fd = _open_dir(lock_dir())
    try:
        fd, writable = _open_lock(dir_fd, lock_name(tag))
    finally:
        os.close(dir_fd)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"another build of {tag} is running (pid {holder(fd)}); waiting")
            start = time.monotonic()
            fcntl.flock(fd, fcntl.LOCK_EX)
            say(f"the other build of {tag} ended after {time.monotonic() - start:.0f}s of waiting")
        if writable:
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
