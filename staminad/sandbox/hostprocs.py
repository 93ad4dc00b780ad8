"""Processes and sockets of the `local` runtime, read from /proc: what to kill, and who holds a port.

The local runtime's processes share the daemon's user and pid space, so they are found by what they
carry, never by name: a tag in their environment (`NAME=value`, see `local.SERVER_TAG`), or the server's
process group or session. `kill_tagged` ends them; `port_blame` and `listener_holders` read who holds the
server's port, which decides whether a failed start is the agent's or another program's. Listeners come from
the kernel's socket diagnostics (`inside.listening`); `port_blame`, on a failed start only, reads every socket
on the port, in any state, from /proc/net/tcp{,6}.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from staminad.sandbox.base import NotReady, SandboxError
from staminad.sandbox.inside import listening, pgroups


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def group_alive(pgid: int | None) -> bool:
    """Whether any process of group `pgid` is alive (`pgroups.group_alive`); False for None."""
    return pgid is not None and pgroups.group_alive(pgid)


def _carries(proc: Path, tag: str) -> bool:
    """Whether the process's environment holds `tag` (NAME=value) as a whole entry: another variable's value
    that mentions it is not ours. False when it is gone or its environment is not ours to read."""
    try:
        return tag.encode() in (proc / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _group_and_session(proc: Path) -> tuple[int, int] | None:
    """A process's group and session ids; None when it is gone."""
    try:
        stat = (proc / "stat").read_text()
        group, session = (int(x) for x in stat[stat.rindex(")") + 2 :].split()[2:4])
    except (OSError, ValueError):
        return None
    return group, session


def _tagged(tag: str, session: int | None = None) -> Iterator[Path]:
    """/proc entries of the processes whose environment carries `tag` (NAME=value), or that are in `session`."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        ids = _group_and_session(proc) if session is not None else None
        if (ids is not None and ids[1] == session) or _carries(proc, tag):
            yield proc


def kill_tagged(tag: str, session: int | None = None, passes: int = 10) -> int:
    """SIGKILL every process carrying `tag` (and every one in `session`: the server's, which a process that
    dropped the tag but not the session is still in); returns how many signals that took (one still dying
    when the next pass looks is signalled again).

    A pass that killed something is followed by another (at most `passes`): a child its victim forked
    just before may have been mid-exec, when /proc shows no environment yet.
    """
    killed = 0
    for _ in range(passes):
        found = 0
        for proc in _tagged(tag, session):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(proc.name), signal.SIGKILL)
                found += 1
        killed += found
        if not found:
            break
    return killed


TCP_STATES = {
    "01": "ESTABLISHED",
    "02": "SYN_SENT",
    "03": "SYN_RECV",
    "04": "FIN_WAIT1",
    "05": "FIN_WAIT2",
    "06": "TIME_WAIT",
    "07": "CLOSE",
    "08": "CLOSE_WAIT",
    "09": "LAST_ACK",
    "0A": "LISTEN",
    "0B": "CLOSING",
}


@dataclass(frozen=True)
class PortSocket:
    """A TCP socket whose local port is the one looked at, as /proc/net/tcp{,6} shows it."""

    state: str  # TCP_STATES' key
    inode: str  # "0" when no process holds it any more (TIME_WAIT, an orphaned close)
    remote: str  # the peer's address:port (0.0.0.0:0 for a listener)

    def says(self) -> str:
        state = TCP_STATES.get(self.state, self.state)
        return state if self.state == "0A" else f"{state} with {self.remote}"


def _address(text: str) -> str:
    """/proc/net/tcp's hex address:port (IPv4 or IPv6, in host order words) as text."""
    host, _, port = text.partition(":")
    raw = bytes.fromhex(host)
    if len(raw) == 4:
        return f"{socket.inet_ntop(socket.AF_INET, raw[::-1])}:{int(port, 16)}"
    raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return f"[{socket.inet_ntop(socket.AF_INET6, raw)}]:{int(port, 16)}"


def sockets_on(port: int) -> list[PortSocket]:
    """Every TCP socket (IPv4 or IPv6, any state) bound to local port `port` in this network namespace."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                with contextlib.suppress(IndexError, ValueError):
                    if int(fields[1].rsplit(":", 1)[1], 16) == port:
                        found.append(PortSocket(fields[3], fields[9], _address(fields[2])))
    return found


def listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on `port` (any address, IPv4 or IPv6) in this network namespace.

    By a NETLINK_SOCK_DIAG dump of listening sockets (`inside.listening`: the tables, which walk the whole
    connection hash, only where netlink cannot be had); a server start asks this on every poll.
    """
    return {link.removeprefix("socket:[").removesuffix("]") for link in listening.sockets(port)}


def port_blame(port: int, tag: str, pgid: int | None, connected: bool) -> SandboxError | NotReady | None:
    """Who kept the agent's server from serving `port`, judged by who holds the port, never by the server's log.

    Called when the server failed to start (`connected`: whether a probe ever reached a listener there). A
    process of the sandbox (carrying `tag`, or in the server's process group or session) holding the port from
    outside that group is the agent's own leftover: `server_left_running`. A socket on the port held by any
    other process is another program's: the platform's `port_taken`. So is a socket no process holds any more
    (say, another program's connection in TIME_WAIT) when no probe ever reached a listener: the port was free
    when handed out (the allocator's bind check), so a connection on it that the agent's server never accepted
    is someone else's. None: nothing on the port explains the failure, which stays the agent's.
    """
    sockets = sockets_on(port)
    live = {f"socket:[{s.inode}]": s for s in sockets if s.inode != "0"}
    holders: dict[str, tuple[int, bool, int]] = {}  # socket -> (pid, of the sandbox, process group)
    blind = False  # a process of the sandbox whose descriptors this user cannot read
    for proc in Path("/proc").iterdir() if live else ():
        if not proc.name.isdigit():
            continue
        ids = _group_and_session(proc)
        if ids is None:
            continue  # gone meanwhile
        group, session = ids
        ours = (pgid is not None and pgid in (group, session)) or _carries(proc, tag)
        try:
            fds = list((proc / "fd").iterdir())
        except OSError:
            blind = blind or ours  # gone, or made undumpable: then its sockets cannot be told from others'
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                link = os.readlink(fd)
                if link in live:
                    holders[link] = (int(proc.name), ours, group)
    for link, (pid, ours, group) in holders.items():
        if ours and group != pgid:
            return NotReady(
                "server_left_running",
                f"port {port} is held ({live[link].says()}) by process {pid} of this sandbox outside the process "
                "group that `bash run_server.sh` runs in (left from before, or detached, e.g. with setsid or a "
                "daemon fork), so the server could not use it. Keep the server in run_server.sh's process group.",
            )
    strangers = [(link, s) for link, s in live.items() if link in holders and not holders[link][1]]
    if not blind:
        strangers += [(link, s) for link, s in live.items() if link not in holders]
    if strangers:
        link, found = strangers[0]
        who = f"process {holders[link][0]}" if link in holders else "a process this user cannot see"
        return SandboxError(
            f"port {port} is held ({found.says()}) by {who} outside this sandbox, so the server could not bind it",
            "port_taken",
        )
    left = [s for s in sockets if s.inode == "0"]
    if left and not connected:
        return SandboxError(
            f"port {port} is held by a connection no process of this sandbox made ({left[0].says()}), so the "
            "server could not bind it",
            "port_taken",
        )
    return None


def listener_holders(port: int, tag: str) -> list[tuple[int, int]] | None:
    """(pid, process group) of each process carrying `tag` that holds a socket listening on `port`.

    None when no listener is visible here (then there is nothing to judge); an empty list when the
    listener belongs to no process of ours: another program holds the port, and testing it would
    score someone else.
    """
    inodes = listening_inodes(port)
    if not inodes:
        return None
    wanted = {f"socket:[{inode}]" for inode in inodes}
    holders = []
    for proc in _tagged(tag):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if any(_names(fd) in wanted for fd in (proc / "fd").iterdir()):
                stat = (proc / "stat").read_text()
                holders.append((int(proc.name), int(stat[stat.rindex(")") + 2 :].split()[2])))
    return holders


def _names(fd: Path) -> str | None:
    """What the descriptor names; None when it closed since its directory was listed (a server closing a
    connection while it is looked at still holds its listener: only that descriptor is skipped)."""
    try:
        return os.readlink(fd)
    except OSError:
        return None
