"""Every host-side touch of a file an agent can write: beneath a trusted root, no link followed, bounded.

The daemon (often root) reads and creates files in places the agent controls: its workspace on this
disk, `.home` inside it, and on the local runtime the control directory too. The agent may have put
anything there: a symlink to `/etc` where a directory is expected, a dangling link to a host path
where a file is to be created, a FIFO that never answers a read, a sparse file of a terabyte, a plain
file where a directory belongs. So every such touch goes through here:

- a path is walked one component at a time from an open descriptor of the trusted root
  (`O_NOFOLLOW` at every step, `..` and absolute paths refused), so no symlink is ever followed,
  at any component, and nothing resolves outside the root however the tree changes meanwhile;
- only regular files are read (a FIFO, device or socket is opened non-blocking and refused), and
  every read is bounded in bytes;
- what the daemon creates is created with `O_EXCL` (never written through something already
  there), and ownership is changed on the descriptor it opened (`fchown`), never by path;
- a non-directory (file, link, FIFO) found where a directory must be is the agent's own mess in
  its own tree: it is moved aside under a name that says so, and a directory made in its place.

Walks of a whole tree (`walk_files`) are bounded in entries and time as well.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
MOVED_ASIDE = ".not-a-directory"  # suffix of what stood where a directory belongs


class UnsafePathError(OSError):
    """A path beneath a root that cannot be touched safely: a link, a non-regular file, `..`, an absolute path."""


def _parts(rel: str | PurePosixPath) -> list[str]:
    path = PurePosixPath(rel)
    if path.is_absolute():
        raise UnsafePathError(errno.EINVAL, f"absolute path {str(rel)!r} where one beneath a root is expected")
    parts = [p for p in path.parts if p not in ("", ".")]
    if ".." in parts:
        raise UnsafePathError(errno.EINVAL, f"path {str(rel)!r} leaves its root")
    return parts


def open_root(root: Path) -> int:
    """A descriptor of the trusted root directory itself (the daemon's own path: it is followed as given)."""
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _walk_dirs(root_fd: int, parts: list[str]) -> int:
    """A new descriptor of the directory `parts` below `root_fd`, never following a link (ELOOP/ENOTDIR if one)."""
    fd = os.dup(root_fd)
    try:
        for name in parts:
            nxt = os.open(name, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _refuse_link(exc: OSError, rel: object) -> OSError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return UnsafePathError(exc.errno, f"{rel}: a link or non-directory on the way (not followed)")
    return exc


def _parent(root: Path, rel: str | PurePosixPath) -> tuple[int, str]:
    """(a descriptor of the directory holding `rel` beneath `root`, reached without following a link; the last name).
    UnsafePathError for a link or non-directory on the way."""
    parts = _parts(rel)
    if not parts:
        raise UnsafePathError(errno.EISDIR, f"{rel}: the root itself is not a file")
    root_fd = open_root(root)
    try:
        return _walk_dirs(root_fd, parts[:-1]), parts[-1]
    except OSError as exc:
        raise _refuse_link(exc, rel) from None
    finally:
        os.close(root_fd)


def open_regular(root: Path, rel: str | PurePosixPath) -> int:
    """A read-only descriptor of the regular file `rel` beneath `root` (UnsafePathError for a link on the way or a
    file that is not regular, FileNotFoundError when absent); a FIFO is opened non-blocking and refused."""
    dir_fd, name = _parent(root, rel)
    try:
        fd = os.open(name, _READ, dir_fd=dir_fd)
    except OSError as exc:
        raise _refuse_link(exc, rel) from None
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafePathError(errno.EINVAL, f"{rel}: not a regular file (not read)")
    return fd


def read_file(root: Path, rel: str | PurePosixPath, limit: int) -> bytes:
    """At most `limit` bytes of the regular file `rel` beneath `root` (see `open_regular`)."""
    with os.fdopen(open_regular(root, rel), "rb", closefd=True) as fh:
        return fh.read(limit)


def _move_aside(dir_fd: int, name: str) -> None:
    """Rename what stands at `name` (not a directory) out of the way, under a name that says what it was."""
    for n in range(100):
        aside = f"{name}{MOVED_ASIDE}" + (f".{n}" if n else "")
        try:
            os.stat(aside, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(name, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            return
    os.unlink(name, dir_fd=dir_fd)  # a hundred of them already: the agent is only making noise


def ensure_dir(root: Path, rel: str | PurePosixPath, mode: int = 0o755, owner: tuple[int, int] | None = None) -> None:
    """Make `rel` beneath `root` a real directory, each missing component created with `mode`; whatever non-directory
    stands in the way (a file, a link, a FIFO) is moved aside first. `owner` (uid, gid) is given to the directories
    on the path (`fchown` of the descriptor opened without following anything)."""
    fd = open_root(root)
    try:
        for name in _parts(rel):
            try:
                nxt = os.open(name, _DIR, dir_fd=fd)
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, mode, dir_fd=fd)
                nxt = os.open(name, _DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise
                _move_aside(fd, name)
                os.mkdir(name, mode, dir_fd=fd)
                nxt = os.open(name, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
            if owner is not None:
                st = os.fstat(fd)
                if (st.st_uid, st.st_gid) != owner:
                    os.fchown(fd, *owner)
    finally:
        os.close(fd)


def create_file(
    root: Path, rel: str | PurePosixPath, data: bytes, mode: int = 0o644, owner: tuple[int, int] | None = None
) -> bool:
    """Create `rel` beneath `root` holding `data` unless something (anything, a dangling link included) is there
    already: True when written. The parent directories must be real ones (UnsafePathError otherwise)."""
    dir_fd, name = _parent(root, rel)
    try:
        fd = os.open(name, _CREATE, mode, dir_fd=dir_fd)
    except FileExistsError:
        return False
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "wb", closefd=True) as fh:
        if owner is not None:
            os.fchown(fd, *owner)
        fh.write(data)
    return True


class WalkBudget:
    """Bounds on one walk of an agent's tree: entries looked at and seconds spent (`exhausted` says which ran out)."""

    def __init__(self, entries: int, seconds: float) -> None:
        self.entries, self.deadline = entries, time.monotonic() + seconds
        self.exhausted = ""

    def spend(self) -> bool:
        """Count one entry; False once a bound is reached."""
        self.entries -= 1
        if self.entries < 0:
            self.exhausted = "entries"
        elif time.monotonic() > self.deadline:
            self.exhausted = "time"
        return not self.exhausted


MAX_DEPTH = 64  # directories deep a walk goes (descriptors held: one per level of the current path only)


def walk_files(
    root: Path, budget: WalkBudget, skip_dir: frozenset[str] = frozenset(), skip_hidden: bool = False
) -> Iterator[tuple[str, os.stat_result, int | None]]:
    """(relative path, lstat, descriptor or None) of every entry below `root`, depth first, links never followed.

    Regular files are yielded with a descriptor opened read-only for the caller to read (the walker closes it
    once the caller moves on); other entries with None. Directories named in `skip_dir` (and, with `skip_hidden`,
    those whose name starts with a dot) are not entered, nor any deeper than MAX_DEPTH. Only the directories on
    the current path are held open, so a tree of many sibling directories costs no more descriptors than a deep
    one.
    """
    root_fd = open_root(root)
    try:
        yield from _walk(root_fd, "", 0, budget, skip_dir, skip_hidden)
    finally:
        os.close(root_fd)


def _walk(
    dir_fd: int, prefix: str, depth: int, budget: WalkBudget, skip_dir: frozenset[str], skip_hidden: bool
) -> Iterator[tuple[str, os.stat_result, int | None]]:
    names = []
    try:
        with os.scandir(dir_fd) as entries:
            for entry in entries:
                if not budget.spend():
                    break
                names.append(entry.name)
    except OSError:
        return
    for name in names:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        rel = f"{prefix}{name}"
        if stat.S_ISDIR(st.st_mode):
            yield rel, st, None
            if name in skip_dir or (skip_hidden and name.startswith(".")) or depth >= MAX_DEPTH or budget.exhausted:
                continue
            try:
                sub = os.open(name, _DIR, dir_fd=dir_fd)
            except OSError:
                continue
            try:
                yield from _walk(sub, rel + "/", depth + 1, budget, skip_dir, skip_hidden)
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode):
            try:
                fd = os.open(name, _READ, dir_fd=dir_fd)
            except OSError:
                continue
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):  # still a file once opened
                    yield rel, st, fd
            finally:
                os.close(fd)
        else:
            yield rel, st, None
        if budget.exhausted:
            return


def tree_bytes(root: Path, budget: WalkBudget) -> int:
    """Bytes of disk the tree below `root` takes (allocated blocks, so a sparse file counts what it holds)."""
    total = 0
    for _, st, _fd in walk_files(root, budget):
        total += st.st_blocks * 512
    return total


def glob(root: Path, pattern: str, budget: WalkBudget) -> list[tuple[str, os.stat_result]]:
    """(relative path, lstat) of the regular files beneath `root` matching `pattern` component by component
    (`fnmatch` per component, no `**`), found without following any link."""
    found: list[tuple[str, os.stat_result]] = []
    parts = _parts(pattern)
    if not parts:
        return found

    def visit(dir_fd: int, depth: int, prefix: str) -> None:
        want, last = parts[depth], depth == len(parts) - 1
        if any(c in want for c in "*?["):
            names = []
            try:
                with os.scandir(dir_fd) as entries:
                    for e in entries:
                        if not budget.spend():
                            break
                        if fnmatch.fnmatchcase(e.name, want):
                            names.append(e.name)
            except OSError:
                return
        else:
            names = [want] if budget.spend() else []
        for name in sorted(names):
            if budget.exhausted:
                return
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                continue
            if last:
                if stat.S_ISREG(st.st_mode):
                    found.append((prefix + name, st))
            elif stat.S_ISDIR(st.st_mode):
                try:
                    sub = os.open(name, _DIR, dir_fd=dir_fd)
                except OSError:
                    continue
                try:
                    visit(sub, depth + 1, prefix + name + "/")
                finally:
                    os.close(sub)

    root_fd = open_root(root)
    try:
        visit(root_fd, 0, "")
    finally:
        os.close(root_fd)
    return found
