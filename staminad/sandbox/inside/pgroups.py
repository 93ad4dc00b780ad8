"""Process groups and users inside a sandbox container: signal, await and end them (standard library only).

Part of the in-container launcher (`launcher.py`, which loads this file beside it: `-I` keeps the script's
directory off sys.path); root runs it, without capabilities over the agent's files but free to signal.

Nothing here forks: a step that decides blame (ending the agent's processes, reading who holds its port) must
work while the agent's processes hold every free pid of the container. What needs the agent's own eyes or
hands is done by the launcher itself wearing the agent's effective ids for a moment (`acting_as`), never by a
child that drops to the agent (which needs a pid, and which the agent could signal).
"""

import contextlib
import os
import select
import signal
import time
from collections.abc import Iterator
from typing import Any

STOP_POLL = 0.002  # seconds between looks at whether a group too large to watch by pidfds is gone (no fork)
END_AGENT_TIMEOUT = 10.0  # seconds to end every process of the agent's user
END_AGENT_PAUSE = 0.02  # seconds at most between two sweeps of kill(-1) while killed processes are still dying
PIDFD_WATCH = 64  # processes whose exits are awaited by pidfd (more are given a fixed pause instead)
# The real uid the launcher wears while it acts as the agent: neither root's nor the agent's, so no process of the
# agent may signal the launcher meanwhile (a signal needs the sender's uid to be the target's real or saved one),
# and a kill(-1) it sends reaches the agent's processes and no root process.
SHIELD_UID = 65533


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _live_members(pgid: int) -> list[int]:
    """The processes of the group that have not exited yet (a zombie has: it holds no socket or file, and init
    reaps it on its own time)."""
    live = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    rest = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if rest[0] not in ("Z", "X") and int(rest[2]) == pgid:
                live.append(int(name))
    return live


def _exits(pids: list[int], seconds: float) -> bool:
    """Wait up to `seconds` until every one of `pids` has exited, by their pidfds (so at once when they have);
    False, at once, when they cannot be watched (a crowd over PIDFD_WATCH, a kernel without pidfds)."""
    if len(pids) > PIDFD_WATCH:
        return False
    until = time.monotonic() + seconds
    fds: list[int] = []
    try:
        for pid in pids:
            try:
                fds.append(os.pidfd_open(pid))
            except ProcessLookupError:
                continue  # gone already
            except (OSError, AttributeError):
                return False
        while fds and (left := until - time.monotonic()) > 0:
            for fd in select.select(fds, [], [], left)[0]:
                os.close(fd)
                fds.remove(fd)
        return True
    finally:
        for fd in fds:
            os.close(fd)


def _await_exits(pids: list[int], seconds: float) -> None:
    """Wait up to `seconds` until every one of `pids` has exited (see `_exits`); a crowd too large to watch, or a
    kernel without pidfds, is simply given the time."""
    if not _exits(pids, seconds):
        time.sleep(seconds)


def wait_group(pgid: int, seconds: float) -> bool:
    """Wait up to `seconds` until no process of the group is alive; whether that came.

    The group's live members are awaited by their pidfds (no polling), and the group looked at again once they
    have exited (one may have forked meanwhile); a group that cannot be watched so is looked at every STOP_POLL."""
    deadline = time.monotonic() + seconds
    while group_alive(pgid):
        members = _live_members(pgid)
        if not members:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if not _exits(members, left):
            time.sleep(min(STOP_POLL, left))
    return True


@contextlib.contextmanager
def acting_as(uid: int, gid: int | None = None) -> Iterator[None]:
    """Run the block with the agent's effective (and so file-system) uid and gid, forking nothing.

    Meanwhile the launcher reads the agent's descriptors in /proc and signals its processes as the agent's own
    user may: the effective uid is the agent's, and root's capabilities are out of the effective set. The real
    uid is `SHIELD_UID` and the saved one root's, so no process of the agent can signal the launcher meanwhile
    and the launcher can come back. Every thread of the process changes with it (the C library makes set*id
    process-wide), so a threaded caller holds every other root-side action off meanwhile (`streamlauncher`).
    A launcher that cannot come back to root ends at once rather than serve on with the agent's ids.
    """
    shield = SHIELD_UID if uid != SHIELD_UID else SHIELD_UID - 1
    if gid is not None:
        os.setresgid(-1, gid, -1)
    try:
        os.setresuid(shield, uid, 0)
    except BaseException:
        if gid is not None:
            os.setresgid(-1, 0, -1)
        raise
    try:
        yield
    finally:
        try:
            os.setresuid(0, 0, 0)
            if gid is not None:
                os.setresgid(-1, 0, -1)
        except OSError:
            os._exit(70)


def _uids(pid: str) -> set[int]:
    """The real, effective, saved and file-system uids of a process (empty when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("Uid:"):
                    return {int(x) for x in line.split()[1:]}
    except (OSError, ValueError):
        pass
    return set()


def _of_user(uid: int) -> list[int]:
    """Every process that runs with `uid` among its uids (a non-dumpable one too: /proc/PID/status stays readable)."""
    me = os.getpid()
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me and uid in _uids(p)]


def _live_of_user(uid: int) -> list[int]:
    return [p for p in _of_user(uid) if _state(p) != "Z"]  # a zombie holds its pid until init reaps it


def _sweep(uid: int, sig: int) -> bool:
    """One kill(-1, sig) with the agent's effective uid: every process the agent's user may signal, in one pass of
    the kernel's under its task list lock (a fork racing it fails, its parent having the signal pending); False
    when there was none to signal."""
    try:
        with acting_as(uid):
            os.kill(-1, sig)
    except ProcessLookupError:
        return False
    return True


def end_user(uid: int) -> dict[str, Any]:
    """Stop, then kill, every process of `uid` until a look finds none alive (bounded by END_AGENT_TIMEOUT);
    forks nothing.

    Each step is one kill(-1) sent with the agent's effective uid (`_sweep`), never a kill per pid read from
    /proc, which fork chains outrun (each is gone, its child in its place, before the kill arrives). The stop
    comes first, so that the count of what was ended is read from a frozen set and the look is not slowed by
    the agent's processes running. `left` counts what is still alive at the bound (a process stuck in the
    kernel): the caller then knows the agent's processes were not all ended, and says so rather than go on.
    """
    if uid == 0:
        raise ValueError("refusing to end root's processes")
    if not _sweep(uid, signal.SIGSTOP):
        return {"ended": 0, "left": 0}
    seen: set[int] = set(_live_of_user(uid))
    deadline = time.monotonic() + END_AGENT_TIMEOUT
    while True:
        _sweep(uid, signal.SIGKILL)
        left = _live_of_user(uid)
        if not left or time.monotonic() >= deadline:
            return {"ended": len(seen | set(left)), "left": len(left)}
        seen.update(left)
        _await_exits(left, min(END_AGENT_PAUSE, max(0.0, deadline - time.monotonic())))


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            s = fh.read()
        return s[s.rindex(")") + 2 :].split()[0]
    except (OSError, ValueError, IndexError):
        return "Z"
