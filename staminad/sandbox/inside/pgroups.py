"""Process groups and users inside a sandbox container: signal, await and end them (standard library only).

Part of the in-container launcher (`launcher.py`, which loads this file beside it: `-I` keeps the script's
directory off sys.path); root runs it, without capabilities over the agent's files but free to signal.
"""

import contextlib
import os
import select
import signal
import time
from typing import Any

STOP_POLL = 0.002  # seconds between looks at whether a group too large to watch by pidfds is gone (no fork)
END_AGENT_TIMEOUT = 10.0  # seconds to end every process of the agent's user
PIDFD_WATCH = 64  # processes whose exits are awaited by pidfd (more are given a fixed pause instead)


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


def end_user(uid: int) -> dict[str, Any]:
    """Stop, then kill, every process of `uid` until a pass finds none (bounded); forks nothing.

    Stopping first keeps a fork loop from replacing what is killed: a stopped process forks no more, and the
    next pass catches any child forked before its parent stopped.
    """
    if uid == 0:
        raise ValueError("refusing to end root's processes")
    ended: set[int] = set()
    deadline = time.monotonic() + END_AGENT_TIMEOUT
    while time.monotonic() < deadline:
        pids = [p for p in _of_user(uid) if _state(p) != "Z"]  # a zombie holds its pid until init reaps it
        if not pids:
            return {"ended": len(ended), "left": 0}
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
        ended.update(pids)
        _await_exits(pids, 0.005)  # the kernel removes killed processes on its own time; a zombie waits for init
    left = [p for p in _of_user(uid) if _state(p) != "Z"]
    return {"ended": len(ended), "left": len(left)}


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            s = fh.read()
        return s[s.rindex(")") + 2 :].split()[0]
    except (OSError, ValueError, IndexError):
        return "Z"
