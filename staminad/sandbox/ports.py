"""Port allocation for servers under test: unique on the host, across every staminabench process, and
never a port the kernel hands out for outgoing connections.

A shared box runs several daemons and `staminad run`s at once, each with its own allocator. Checking
that a bind succeeds is not enough there: two processes can both find a port free before either
agent's server binds it, and the second suite then tests the first scenario's server. So a port is
handed out only while this process holds an exclusive `flock` on its file in every machine-wide lock
directory (the kernel drops the lock when the process dies, so a crash leaks nothing), no other
scenario of this process holds it, and binds on the wildcard addresses succeed. `release` gives it back.

Lock directory (`default_lock_dir`): `$STAMINAD_PORT_LOCKS` when set, else `lockdir.default_dir("ports")`
(`/run/staminabench/ports` for root, a directory below the user's state home otherwise). It is this user's
alone, mode 0700, reached through no directory another user may change (`lockdir`): a lock file anyone could
open is a lock anyone could hold, so every process of one user meets in one directory and processes of
different users coordinate by the bind check alone (give them disjoint `STAMINAD_PORTS`; a clash is still
caught when the server starts, as the platform's `port_taken`). A lock file is created once, 0600, never
removed (so every process locks the same inode), and opened without following symlinks or blocking on
anything but a regular file. A port whose lock cannot be taken is busy: the next one is tried, and a range
with none left is `PortsExhausted`, one line saying why each port was passed over.

The kernel picks the local port of an outgoing connection from `net.ipv4.ip_local_port_range`
(less the ports listed in `ip_local_reserved_ports`); a connection that took a server's port before the
server bound it, or left it in TIME_WAIT, makes the bind fail with EADDRINUSE, however well the agent
wrote its server. So a configured range (`STAMINAD_PORTS=LOW-HIGH`, or the allocator's arguments) that
overlaps those ports is refused in one line, the default range 20000-29999 is used less any such ports
(refused only when none is left), and `allocate` skips a port that the kernel setting, read again each
time, has since put in that range.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import threading
from pathlib import Path

from protocol.errors import UsageError
from staminad.sandbox.base import SandboxError
from staminad.sandbox.lockdir import LockDirError, default_dir, open_lock_file, open_private_dir

LOCK_DIR_ENV = "STAMINAD_PORT_LOCKS"
RANGE_ENV = "STAMINAD_PORTS"
DEFAULT_RANGE = (20000, 29999)
EPHEMERAL_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
RESERVED_FILE = Path("/proc/sys/net/ipv4/ip_local_reserved_ports")


class PortsExhausted(SandboxError):
    """Every port of the configured range is busy: the platform's `port_taken` (retried, never the agent's)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "port_taken")


class PortRangeError(UsageError, ValueError):
    """A port range that cannot be used, with the reason in one line."""


class PortLockError(UsageError, OSError):
    """A lock directory that cannot be made safe or used, in one line."""


def port_is_free(port: int, host: str | None = None) -> bool:
    """Whether a bind on `port` succeeds now: on `host`, or on both wildcards (0.0.0.0, and :: where IPv6 is
    on), which no socket of any address on the port lets through. No SO_REUSEADDR: a TIME_WAIT counts."""
    targets = [(socket.AF_INET6 if ":" in host else socket.AF_INET, host)] if host else []
    targets = targets or [(socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")]
    for family, address in targets:
        try:
            s = socket.socket(family, socket.SOCK_STREAM)
        except OSError:  # no IPv6 on this host: nothing can hold an IPv6 port
            continue
        with s:
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # the IPv4 side is checked above
            try:
                s.bind((address, port))
            except OSError:
                return False
    return True


def _ranges(text: str) -> list[tuple[int, int]]:
    """`20000-29999` or `8080,9000-9009` (the kernel's list syntax) as inclusive (low, high) pairs."""
    out = []
    for part in text.replace("\t", " ").replace(",", " ").split():
        low, _, high = part.partition("-")
        out.append((int(low), int(high or low)))
    return out


def outgoing_ports() -> tuple[tuple[int, int] | None, list[tuple[int, int]]]:
    """The kernel's range for outgoing connections' local ports, and the reserved ranges it leaves out.

    (None, []) where /proc does not say (not Linux): nothing is known to avoid.
    """
    try:
        low, high = (int(x) for x in EPHEMERAL_FILE.read_text().split())
    except (OSError, ValueError):
        return None, []
    try:
        reserved = _ranges(RESERVED_FILE.read_text())
    except (OSError, ValueError):
        reserved = []
    return (low, high), reserved


def is_outgoing(port: int, ephemeral: tuple[int, int] | None, reserved: list[tuple[int, int]]) -> bool:
    """Whether the kernel may give `port` to an outgoing connection."""
    if ephemeral is None or not ephemeral[0] <= port <= ephemeral[1]:
        return False
    return not any(low <= port <= high for low, high in reserved)


def configured_range() -> tuple[int, int] | None:
    """`$STAMINAD_PORTS` as (low, high), None when unset; a malformed value is refused in one line."""
    text = os.environ.get(RANGE_ENV, "").strip()
    if not text:
        return None
    try:
        ((low, high),) = _ranges(text)
    except ValueError:
        raise PortRangeError(f"{RANGE_ENV}={text!r} is not a port range such as 20000-29999") from None
    return low, high


def check_range(low: int, high: int, configured: bool, origin: str = "port range") -> None:
    """Refuse (in one line) a range outside 1024-65535, or one the kernel may use for outgoing connections:
    any overlap when `configured`, only a complete one for the default range (whose overlap is skipped)."""
    if not 1024 <= low <= high <= 65535:
        raise PortRangeError(f"{origin} {low}-{high} is not a range within 1024-65535")
    ephemeral, reserved = outgoing_ports()
    clashing = [p for p in range(low, high + 1) if is_outgoing(p, ephemeral, reserved)]
    if not clashing or (not configured and len(clashing) <= high - low):
        return
    assert ephemeral is not None
    raise PortRangeError(
        f"{origin} {low}-{high} overlaps the kernel's range for outgoing connections {ephemeral[0]}-{ephemeral[1]} "
        f"({len(clashing)} ports, {EPHEMERAL_FILE}), where another program's connection can take a server's port: "
        f"set {RANGE_ENV}=LOW-HIGH to ports outside it, or list them in {RESERVED_FILE}"
    )


def default_lock_dir() -> Path:
    """The lock directory every process of this user shares (see the module)."""
    override = os.environ.get(LOCK_DIR_ENV)
    return Path(override) if override else default_dir("ports")


class PortAllocator:
    """Ports from `low`-`high`; with neither given, from `$STAMINAD_PORTS`, else the default range (see above).

    A range given here or in `$STAMINAD_PORTS` that overlaps the kernel's outgoing ports is refused in one line
    (PortRangeError), as is a lock directory that cannot be made safe (PortLockError); `lock_dir` replaces the
    lock directory (tests; `$STAMINAD_PORT_LOCKS` for everything).
    """

    def __init__(self, low: int | None = None, high: int | None = None, lock_dir: Path | None = None) -> None:
        configured = (low, high) if low is not None and high is not None else configured_range()
        if configured is not None:
            origin = "port range" if low is not None else f"{RANGE_ENV}"
            check_range(*configured, configured=True, origin=origin)
            self.low, self.high = configured
        else:
            self.low, self.high = DEFAULT_RANGE
            check_range(self.low, self.high, configured=False, origin="the default port range")
        self.lock_dir = lock_dir if lock_dir is not None else default_lock_dir()
        self.held: set[int] = set()
        self._locks: dict[int, int] = {}  # port -> the descriptor holding its flock
        self._next = self.low
        self._lock = threading.Lock()  # allocations run in worker threads (they read /proc and take lock files)
        self._dir_fd = self._open_dir()  # a lock directory that cannot be used is refused now, not at a server start

    def _open_dir(self) -> int:
        try:
            return open_private_dir(self.lock_dir)
        except LockDirError as exc:
            raise PortLockError(f"port {exc}") from None
        except OSError as exc:
            raise PortLockError(f"cannot use port lock directory {self.lock_dir}: {exc.strerror}") from None

    def allocate(self) -> int:
        """A free port, reserved (in this process and in the lock directory); callable from any thread.
        `PortsExhausted` (the platform's `port_taken`) when every port is busy, saying why in one line."""
        with self._lock:
            return self._allocate()

    def _allocate(self) -> int:
        span = self.high - self.low + 1
        ephemeral, reserved = outgoing_ports()
        passed = {"held by this process": 0, "outgoing": 0, "locked by another process": 0, "bound": 0}
        for _ in range(span):
            port = self._next
            self._next = self.low + (self._next - self.low + 1) % span
            if port in self.held:
                passed["held by this process"] += 1
            elif is_outgoing(port, ephemeral, reserved):
                passed["outgoing"] += 1
            elif not self._reserve(port):
                passed["locked by another process"] += 1
            elif not port_is_free(port):
                passed["bound"] += 1
                self._unreserve(port)
            else:
                self.held.add(port)
                return port
        why = ", ".join(f"{n} {what}" for what, n in passed.items() if n)
        raise PortsExhausted(
            f"no free port in {self.low}-{self.high} ({why}; locks in {self.lock_dir}): "
            f"wait for other sweeps to end, or set {RANGE_ENV}=LOW-HIGH to a wider range"
        )

    def adopt(self, port: int) -> bool:
        """Reserve `port`, which something of this process already uses (a container found after a restart that
        publishes it), as `allocate` would: False when another process holds its lock or this one hands it out
        already (then it must not be used). No bind check: the user's own listener is what holds it."""
        with self._lock:
            if port in self.held or not self._reserve(port):
                return False
            self.held.add(port)
            return True

    def release(self, port: int) -> None:
        with self._lock:
            self.held.discard(port)
            self._unreserve(port)

    def _reserve(self, port: int) -> bool:
        """Take `port`'s lock without waiting; False when another process holds it, or its name is not this
        user's regular file (a busy port either way)."""
        fd = open_lock_file(self._dir_fd, f"{port}.lock")
        if fd is None:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._locks[port] = fd
        return True

    def _unreserve(self, port: int) -> None:
        fd = self._locks.pop(port, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the only descriptor drops the flock
