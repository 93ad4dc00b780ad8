"""Lock directories no other local user can reach: where the daemon's machine-wide `flock` files live.

A lock file anyone can open is a lock anyone can hold: `flock` needs only a read descriptor, so a user who can
open a port's lock file can take it first and keep it (every port busy, every scenario failing), and a user
who can write the directory can plant a symlink per name. So a lock directory is this user's alone:

- `open_private_dir` walks to it from `/` one component at a time, never following a link (`O_NOFOLLOW`,
  `O_DIRECTORY` on each step; the parent's own links are resolved once first, so `/var/run` still works),
  and checks each directory it passes with `fstat` on the descriptor it holds: owned by root or by this user,
  and writable by nobody else unless sticky (like `/tmp`: there only an entry's owner may rename or remove it,
  and the next step checks that owner). A path through another user's directory is refused in one line.
- the directory itself is made mode 0700 and owned by this user (one of this user's that others may only
  read is closed to them). Whatever else is found at its name (a symlink, a file, a directory of another
  owner, or one that others may write, which is how earlier versions made it: mode 1777) is moved aside
  as `.<name>.untrusted-<ns>` in the checked parent, never followed or emptied, and a fresh directory is
  made in its place; no descriptor opened through the old one locks anything in the new one.
- its files are made 0600 (`open_lock_file`) and used only when they are regular files of this user.

Processes of different users share no lock directory this way, by design: another user's lock could deny
ours. Each user's processes meet in the one directory `default_dir` names for that user.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import time
from pathlib import Path

from protocol.errors import UsageError

log = logging.getLogger(__name__)

SYSTEM_DIR = Path("/run/staminabench")  # root's machine-wide lock directories live below it
OTHERS = stat.S_IRWXG | stat.S_IRWXO  # any access for the group or others
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LockDirError(UsageError, OSError):
    """A lock directory that cannot be made safe (reached through another user's directory), in one line."""


def default_dir(name: str) -> Path:
    """Where this user's `name` locks live: `/run/staminabench/<name>` for root; else below the user's state home
    (`$XDG_STATE_HOME`, default `~/.local/state`, as for the default state directory), `staminabench/<name>`:
    one place per user whatever the state directory, `TMPDIR` or login session of a process."""
    if os.geteuid() == 0:
        return SYSTEM_DIR / name
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "staminabench" / name


def _trusted(fd: int, where: str, path: Path) -> None:
    """Refuse the directory `fd` (reached as `where`) unless it is root's or ours and only its owner may change
    its entries (or it is sticky, where they cannot replace ours)."""
    info = os.fstat(fd)
    fix = "use a path only root or this user can change"
    if info.st_uid not in (0, os.geteuid()):
        raise LockDirError(f"lock directory {path} is reached through {where}, owned by uid {info.st_uid}: {fix}")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
        raise LockDirError(f"lock directory {path} is reached through {where}, which others may write: {fix}")


def _step(parent: int, part: str, where: str, path: Path) -> int:
    """Open the directory `part` below `parent`, making it (0755, like `mkdir -p`) when missing."""
    try:
        return os.open(part, DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        with contextlib.suppress(FileExistsError):
            os.mkdir(part, 0o755, dir_fd=parent)
    try:
        return os.open(part, DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise LockDirError(f"lock directory {path} is reached through {where}, not a directory") from None
        raise


def _set_aside(parent: int, name: str, path: Path, why: str) -> None:
    """Move what is at `name` aside (renamed within the checked parent: nothing followed, nothing deleted)."""
    aside = f".{name}.untrusted-{time.time_ns()}"
    try:
        os.rename(name, aside, src_dir_fd=parent, dst_dir_fd=parent)
    except FileNotFoundError:
        return  # gone meanwhile: a fresh one is made
    except OSError as exc:
        raise LockDirError(f"lock directory {path} is {why} and cannot be moved aside ({exc.strerror})") from None
    log.warning("lock directory %s was %s: moved aside to %s, a fresh one made", path, why, path.parent / aside)


def _own(parent: int, name: str, path: Path) -> int | None:
    """A descriptor of `name` if it is this user's directory that no one else may write (closed to them now, if
    it was open for reading: `mkdir` under a umask of 022); else it is moved aside."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        _set_aside(parent, name, path, "a symlink or not a directory")
        return None
    info = os.fstat(fd)
    if info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        if info.st_mode & OTHERS:
            os.fchmod(fd, stat.S_IMODE(info.st_mode) & ~OTHERS)
        return fd
    os.close(fd)
    mode = stat.S_IMODE(info.st_mode)
    _set_aside(parent, name, path, f"owned by uid {info.st_uid}, mode {mode:o}")
    return None


def open_private_dir(path: Path) -> int:
    """A descriptor of the lock directory `path`, made or made safe as the module says; `LockDirError` (one line)
    when no safe directory can be had there."""
    path = Path(os.path.abspath(path))
    parent_path = Path(os.path.realpath(path.parent))
    fd = os.open("/", DIR_FLAGS)
    try:
        _trusted(fd, "/", path)
        where = Path("/")
        for part in parent_path.parts[1:]:
            where = where / part
            child = _step(fd, part, str(where), path)
            os.close(fd)
            fd = child
            _trusted(fd, str(where), path)
        for _ in range(3):  # a name planted again between the move and the mkdir is moved again
            found = _own(fd, path.name, path)
            if found is not None:
                return found
            with contextlib.suppress(FileExistsError):
                os.mkdir(path.name, 0o700, dir_fd=fd)
        raise LockDirError(f"lock directory {path} keeps being replaced: use a path only this user can write")
    finally:
        os.close(fd)


def open_lock_file(dir_fd: int, name: str) -> int | None:
    """A descriptor of the lock file `name` (made 0600), or None when the name is not this user's regular file."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # O_NONBLOCK: a FIFO cannot hang us
    try:
        fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
    except OSError:  # a symlink (ELOOP), a directory, a file we may not open
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        return None
    if info.st_mode & OTHERS:
        os.fchmod(fd, 0o600)
    return fd
