"""A bubblewrap enclosure as the host sees it: the record bwrap writes (`--info-fd`), ending it, and who is in it.

bwrap writes `{"child-pid": N, "pid-namespace": INODE, ...}` once the enclosure exists: N is the host pid of the
enclosure's init (pid 1 inside). When that init dies the kernel kills every process of its pid namespace, so
ending an enclosure is one SIGKILL, and waiting for the init's exit (a pidfd) waits for all of them. A recorded
pid is only signalled while it is still in the recorded namespace: a pid reused since then is never touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
from pathlib import Path

from staminad.sandbox.bounded import SMALL, read_head

END_TIMEOUT = 10.0  # seconds for an enclosure's processes to be gone once its init is killed


def read_record(record: Path) -> tuple[int, str] | None:
    """(the init's host pid, its pid namespace as /proc names it) from bwrap's record; None without one."""
    try:
        data = json.loads(read_head(record, SMALL))
        return int(data["child-pid"]), f"pid:[{int(data['pid-namespace'])}]"
    except (OSError, ValueError, TypeError, KeyError):
        return None  # not written (yet), or gone


def namespace(pid: int) -> str | None:
    """The pid namespace of host process `pid` ("pid:[INODE]"); None when it is gone."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def holds(record: Path, pid: int) -> bool:
    """Whether host process `pid` runs in the recorded enclosure."""
    found = read_record(record)
    return found is not None and namespace(pid) == found[1]


def end(record: Path, timeout: float = END_TIMEOUT) -> bool:
    """Kill the recorded enclosure's init (so the kernel ends every process in it) and wait until it is gone;
    the record is removed. Whether an enclosure was still there to end."""
    found = read_record(record)
    record.unlink(missing_ok=True)
    if found is None:
        return False
    pid, ns = found
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return False  # gone
    try:
        if namespace(pid) != ns:
            return False  # the pid was reused: not ours
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        select.select([fd], [], [], timeout)  # readable once it exited, after the namespace's last process
    finally:
        os.close(fd)
    return True
