"""Port allocation for servers under test: unique on the host, across every staminabench process.

A shared box runs several daemons and `staminad run`s at once, each with its own allocator. Checking
that a bind succeeds is not enough there: two processes can both find a port free before either
agent's server binds it, and the second suite then tests the first scenario's server. So a port is
handed out only while this process holds an exclusive `flock` on its file in a machine-wide lock
directory (the kernel drops the lock when the process dies, so a crash leaks nothing), no other
scenario of this process holds it, and a bind on 127.0.0.1 succeeds. `release` gives both back.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import tempfile
from pathlib import Path

LOCK_DIR_ENV = "STAMINAD_PORT_LOCKS"


class PortsExhausted(RuntimeError):
    """Every port of the configured range is taken."""


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def default_lock_dir() -> Path:
    """One directory for the whole machine (every user), unless `STAMINAD_PORT_LOCKS` names another."""
    return Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "staminabench-ports")


def _shared_dir(path: Path) -> Path:
    """Create the lock directory world-writable and sticky (like /tmp) so every user's processes share it."""
    try:
        path.mkdir(mode=0o1777, parents=True)
        path.chmod(0o1777)  # mkdir's mode is cut by the umask
    except FileExistsError:
        pass
    return path


class PortAllocator:
    def __init__(self, low: int = 20000, high: int = 29999, lock_dir: Path | None = None) -> None:
        if not 1024 <= low <= high <= 65535:
            raise ValueError(f"bad port range {low}-{high}")
        self.low, self.high = low, high
        self.lock_dir = lock_dir or default_lock_dir()
        self.held: set[int] = set()
        self._locks: dict[int, int] = {}  # port -> descriptor holding its flock
        self._next = low

    def allocate(self) -> int:
        span = self.high - self.low + 1
        for _ in range(span):
            port = self._next
            self._next = self.low + (self._next - self.low + 1) % span
            if port in self.held or not self._reserve(port):
                continue
            if port_is_free(port):
                self.held.add(port)
                return port
            self._unreserve(port)
        raise PortsExhausted(f"no free port in {self.low}-{self.high}")

    def release(self, port: int) -> None:
        self.held.discard(port)
        self._unreserve(port)

    def _reserve(self, port: int) -> bool:
        """Take the machine-wide lock of `port` without waiting; False when another process holds it."""
        path = _shared_dir(self.lock_dir) / f"{port}.lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except PermissionError:  # made by another user under a stricter umask: a read-only descriptor locks too
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        with contextlib.suppress(PermissionError):
            os.fchmod(fd, 0o666)  # so other users can open it for writing as well
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._locks[port] = fd
        return True

    def _unreserve(self, port: int) -> None:
        fd = self._locks.pop(port, None)
        if fd is not None:
            os.close(fd)  # closing the only descriptor drops the flock
