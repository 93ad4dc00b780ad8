"""Port allocation for servers under test: unique on the host, across every staminabench process, and
never a port the kernel hands out for outgoing connections.

A shared box runs several daemons and `staminad run`s at once, each with its own allocator. Checking
that a bind succeeds is not enough there: two processes can both find a port free before either
agent's server binds it, and the second suite then tests the first scenario's server. So a port is
handed out only while this process holds an exclusive `flock` on its file in every machine-wide lock
directory (the kernel drops the lock when the process dies, so a crash leaks nothing), no other
scenario of this process holds it, and binds on the wildcard addresses succeed. `release` gives it back.

Lock directories (`lock_dirs`): `$STAMINAD_PORT_LOCKS` alone when set; else `/run/staminabench/ports`
(when it exists or this process may create it: root, or a unit or tmpfiles.d that made it) and always
`/tmp/staminabench-ports`, a fixed path that no user's or unit's `TMPDIR` moves. Locking in both makes
any two processes meet in one: a root daemon and a user's `staminad run` share `/tmp`, and a unit with
a private `/tmp` shares `/run`. Both directories are world-writable and sticky, like `/tmp`; a lock file
is created once, readable by everyone (flock needs only a descriptor, not write access, so user B locks
the file user A created), never removed (so every process locks the same inode), and opened without
following symlinks or blocking on anything but a regular file.

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
import errno
import fcntl
import os
import socket
import stat
import threading
from pathlib import Path

from protocol.errors import UsageError

LOCK_DIR_ENV = "STAMINAD_PORT_LOCKS"
RANGE_ENV = "STAMINAD_PORTS"
RUN_LOCK_DIR = Path("/run/staminabench/ports")
TMP_LOCK_DIR = Path("/tmp/staminabench-ports")  # not tempfile.gettempdir(): TMPDIR differs between users and units
DEFAULT_RANGE = (20000, 29999)
EPHEMERAL_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
RESERVED_FILE = Path("/proc/sys/net/ipv4/ip_local_reserved_ports")


class PortsExhausted(RuntimeError):
    """Every port of the configured range is taken."""


class PortRangeError(UsageError, ValueError):
    """A port range that cannot be used, with the reason in one line."""


class PortLockError(UsageError, OSError):
    """A lock directory that cannot be used safely (a symlink, not a directory, not shared), in one line."""


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


def lock_dirs() -> list[tuple[Path, bool]]:
    """The lock directories to use, each with whether it is required (False: used when available)."""
    override = os.environ.get(LOCK_DIR_ENV)
    if override:
        return [(Path(override), True)]
    return [(RUN_LOCK_DIR, False), (TMP_LOCK_DIR, True)]


def _open_dir(path: Path) -> int:
    """A descriptor of the lock directory `path`, created world-writable and sticky if missing.

    A symlink in its place is refused (O_NOFOLLOW), as is a world-writable directory without the sticky bit
    (anyone could replace a lock file there); one this user made before with its umask's mode is opened up.
    """
    if not os.path.lexists(path):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            path.mkdir(mode=0o1777, parents=True)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise PortLockError(f"port lock directory {path} is not a directory (a symlink or a file)") from None
        raise
    info = os.fstat(fd)
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != 0o1777:
        os.fchmod(fd, 0o1777)  # mkdir's mode is cut by the umask; every user's processes must create files here
    elif info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
        os.close(fd)
        raise PortLockError(f"port lock directory {path} is world-writable without the sticky bit: chmod 1777 it")
    return fd


def _lock_file(dir_fd: int, port: int) -> int | None:
    """A locked descriptor of `port`'s lock file in the directory `dir_fd`; None when another holds it (or the
    name is not a regular file that this user may open: the port is not handed out then either)."""
    name = f"{port}.lock"
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # O_NONBLOCK: a FIFO there cannot hang us
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)  # no O_CREAT first: fs.protected_regular refuses it on others' files
    except FileNotFoundError:
        try:
            fd = os.open(name, flags | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dir_fd)
            os.fchmod(fd, 0o644)  # readable by every user, whatever the umask: they lock it through a read descriptor
        except FileExistsError:  # another process made it meanwhile
            return _lock_file(dir_fd, port)
        except OSError:
            return None
    except OSError:  # a symlink (ELOOP), or unreadable to this user
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


class PortAllocator:
    """Ports from `low`-`high`; with neither given, from `$STAMINAD_PORTS`, else the default range (see above).

    A range given here or in `$STAMINAD_PORTS` that overlaps the kernel's outgoing ports is refused in one line
    (PortRangeError), as is a lock directory that cannot be used (PortLockError); `lock_dir` replaces the lock
    directories (tests; `$STAMINAD_PORT_LOCKS` for everything).
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
        self.lock_dirs = [(lock_dir, True)] if lock_dir is not None else lock_dirs()
        self.held: set[int] = set()
        self._locks: dict[int, list[int]] = {}  # port -> descriptors holding its flocks, one per lock directory
        self._dirs: dict[Path, int] = {}  # lock directory -> its descriptor, once opened
        self._next = self.low
        self._lock = threading.Lock()  # allocations run in worker threads (they read /proc and take lock files)
        self._open_dirs()  # a lock directory that cannot be used is refused now, not at the first server start

    def allocate(self) -> int:
        """A free port, reserved (in this process and in the lock directories); callable from any thread."""
        with self._lock:
            return self._allocate()

    def _allocate(self) -> int:
        span = self.high - self.low + 1
        ephemeral, reserved = outgoing_ports()
        dirs = self._open_dirs()
        for _ in range(span):
            port = self._next
            self._next = self.low + (self._next - self.low + 1) % span
            if port in self.held or is_outgoing(port, ephemeral, reserved) or not self._reserve(port, dirs):
                continue
            if port_is_free(port):
                self.held.add(port)
                return port
            self._unreserve(port)
        raise PortsExhausted(f"no free port in {self.low}-{self.high}")

    def release(self, port: int) -> None:
        with self._lock:
            self.held.discard(port)
            self._unreserve(port)

    def _open_dirs(self) -> list[int]:
        """Descriptors of the lock directories usable now (an optional one that cannot be made is left out, and
        tried again on the next allocation: root or a unit may create it meanwhile)."""
        for path, required in self.lock_dirs:
            if path in self._dirs:
                continue
            try:
                self._dirs[path] = _open_dir(path)
            except PortLockError:
                raise
            except OSError as exc:
                if required:
                    raise PortLockError(f"cannot use port lock directory {path}: {exc.strerror}") from None
        return list(self._dirs.values())

    def _reserve(self, port: int, dirs: list[int]) -> bool:
        """Take `port`'s lock in every lock directory without waiting; False when another process holds one."""
        fds: list[int] = []
        for dir_fd in dirs:
            fd = _lock_file(dir_fd, port)
            if fd is None:
                for taken in fds:
                    os.close(taken)
                return False
            fds.append(fd)
        self._locks[port] = fds
        return True

    def _unreserve(self, port: int) -> None:
        for fd in self._locks.pop(port, []):
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the only descriptor drops the flock
