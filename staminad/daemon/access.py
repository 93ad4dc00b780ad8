"""Who may reach a daemon: with `--socket-group G`, the members of G, through its state directory and socket.

A client needs to search the state directory and write the socket. So a daemon started with a socket
group gives the state directory to that group with mode 2750: members may enter it (and read what is
there, as `staminad report` does) but not write it; the setgid bit makes files and directories created
in it later belong to the group too; the store (`share_store`) is group-readable, so members read it live (its
WAL too: `state.readonly`); everyone else cannot even look in, so the database, the logs and
the sandboxes stay closed to them whatever their own modes. The socket gets the group and its mode
(660 by default then). Nothing is changed that is already right: under systemd the unit's
`StateDirectoryMode=2750` has set the bits before `RestrictSUIDSGID=` would refuse setting them.
"""

from __future__ import annotations

import grp
import os
import stat
from pathlib import Path

from protocol.errors import ExpectedError

SHARED_DIR_MODE = 0o2750


class AccessError(ExpectedError):
    """The state directory or socket cannot be given to the socket group (exit status 1)."""


def group_id(group: str) -> int:
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        raise AccessError(f"--socket-group {group!r} is not a group on this machine") from None


def share_state_dir(state_dir: Path, group: str) -> None:
    """Make `state_dir` group-owned by `group`, mode 2750 (setgid), unless it already is."""
    gid = group_id(group)
    try:
        if state_dir.stat().st_gid != gid:
            os.chown(state_dir, -1, gid)
        if stat.S_IMODE(state_dir.stat().st_mode) != SHARED_DIR_MODE:
            state_dir.chmod(SHARED_DIR_MODE)
        done = state_dir.stat()
    except OSError as exc:
        raise AccessError(_refused(state_dir, group, exc.strerror or str(exc))) from None
    # Without being in the group, chmod silently drops the setgid bit: say so rather than run half-shared.
    if done.st_gid != gid or stat.S_IMODE(done.st_mode) != SHARED_DIR_MODE:
        raise AccessError(_refused(state_dir, group, f"it is still mode {stat.S_IMODE(done.st_mode):o}"))


def share_store(db: Path, group: str) -> None:
    """Let `group` read the store live: the database and the `-wal` and `-shm` beside it, group-owned and
    group-readable (never group-writable: a member could then corrupt the index the daemon reads the WAL through).
    SQLite makes the `-wal` and `-shm` with the database's own mode, so from here on they are born this way."""
    gid = group_id(group)
    for path in (db, db.with_name(f"{db.name}-wal"), db.with_name(f"{db.name}-shm")):
        try:
            st = path.stat()
            if st.st_gid != gid:
                os.chown(path, -1, gid)
            if not st.st_mode & stat.S_IRGRP:
                path.chmod(stat.S_IMODE(st.st_mode) | stat.S_IRGRP)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise AccessError(f"cannot let group {group!r} read {path}: {exc.strerror or exc}") from None


def share_socket(path: Path, mode: int, group: str | None) -> None:
    """Give the bound socket its configured mode and group."""
    try:
        path.chmod(mode)
        if group and path.stat().st_gid != (gid := group_id(group)):  # the setgid state dir gave it already
            os.chown(path, -1, gid)
    except OSError as exc:
        raise AccessError(f"cannot give {path} mode {mode:o}{f' and group {group}' if group else ''}: {exc}") from None


def _refused(state_dir: Path, group: str, why: str) -> str:
    return (
        f"cannot share the state directory {state_dir} with group {group!r} ({why}): the daemon's user must own "
        f"it and be a member of {group!r} (or set it to group {group!r}, mode 2750, beforehand)"
    )


__all__ = ["SHARED_DIR_MODE", "AccessError", "group_id", "share_socket", "share_state_dir", "share_store"]
