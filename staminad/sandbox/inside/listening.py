"""The listening TCP sockets on a port inside a sandbox container, by the kernel's socket diagnostics (stdlib only).

Part of the in-container launcher (`launcher.py`, which loads this file beside it); asked as root for whether
the server's port is free, and with the agent's ids for who holds it (`holders`). /proc/net/tcp{,6} would
say the same, but the kernel writes those tables by walking every bucket of the host's whole connection hash,
whatever namespace asks: on a busy host (thousands of connections in TIME_WAIT, a large hash) reading the two
took ~45 ms each, and a teardown reads them once, a server start four times. A NETLINK_SOCK_DIAG dump asked
for listening sockets only walks the listening hash and answers in well under a millisecond. It needs no
capability and sees this network namespace only, as the tables do. Where netlink cannot be had the tables
are read instead.
"""

import contextlib
import os
import socket
import struct
from typing import Any

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST_DUMP = 0x301  # NLM_F_REQUEST | NLM_F_DUMP
NLMSG_ERROR, NLMSG_DONE = 2, 3
TCP_LISTEN = 10
HOLDERS_LIMIT = 20  # holders of the port named in an answer
_HEADER = struct.Struct("=IHHII")  # struct nlmsghdr
_REQUEST = struct.Struct("=BBBBI")  # struct inet_diag_req_v2 before its 48-byte inet_diag_sockid
_SPORT_AT, _INODE_AT, _MESSAGE = 4, 68, 72  # in struct inet_diag_msg: idiag_id.idiag_sport, idiag_inode, its size


def _dump(family: int, port: int) -> set[str]:
    """The listening sockets of one address family on `port` (OSError when the kernel does not answer a dump)."""
    found: set[str] = set()
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as nl:
        nl.settimeout(5.0)
        body = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN) + bytes(48)
        nl.sendall(_HEADER.pack(_HEADER.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST_DUMP, 1, 0) + body)
        while True:
            data = nl.recv(1 << 16)
            if not data:
                raise OSError("the socket diagnostics dump ended unfinished")
            at = 0
            while at + _HEADER.size <= len(data):
                length, kind = _HEADER.unpack_from(data, at)[:2]
                if kind == NLMSG_DONE:
                    return found
                if kind == NLMSG_ERROR or length < _HEADER.size + _MESSAGE:
                    raise OSError("the socket diagnostics dump was refused")
                msg = at + _HEADER.size
                state = data[msg + 1]
                (sport,) = struct.unpack_from(">H", data, msg + _SPORT_AT)
                (inode,) = struct.unpack_from("=I", data, msg + _INODE_AT)
                if state == TCP_LISTEN and sport == port:
                    found.add(f"socket:[{inode}]")
                at += (length + 3) & ~3


def _tables(port: int) -> set[str]:
    """The same, read from /proc/net/tcp{,6} (the socket tables are world-readable: any user sees them)."""
    sockets: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as fh:
                lines = fh.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                sockets.add(f"socket:[{f[9]}]")
    return sockets


def sockets(port: int) -> set[str]:
    """The listening sockets on `port`, each as its descriptors read (`socket:[INODE]`)."""
    try:
        return _dump(socket.AF_INET, port) | _dump(socket.AF_INET6, port)
    except (
        OSError,
        AttributeError,
        struct.error,
        IndexError,
        ValueError,
    ):  # no netlink here, or a reply it cannot read
        return _tables(port)


def _stat(pid: int) -> tuple[int, int]:
    """(process group, start time in clock ticks) of a process."""
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    rest = s[s.rindex(")") + 2 :].split()
    return int(rest[2]), int(rest[19])


def _links(pid: int) -> set[str]:
    """What each open descriptor of `pid` names; OSError when its descriptors cannot be listed (gone, or not
    readable). A descriptor closed between the listing and its read is skipped, not the process: a server
    closing a connection while it is looked at still holds its listener."""
    links = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            links.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return links


def holders(port: int, leader: int) -> dict[str, Any]:
    """The listening sockets on `port` and every readable process holding one; run with the agent's ids (who alone
    may read its processes' descriptors)."""
    found = sockets(port)
    holding: list[dict[str, Any]] = []
    held: set[str] = set()
    for name in os.listdir("/proc") if found else []:
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            mine = _links(pid) & found
            if not mine:
                continue
            pgid, start = _stat(pid)
            with open(f"/proc/{pid}/cmdline", "rb") as raw:
                cmd = raw.read(300).replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        held |= mine
        if len(holding) < HOLDERS_LIMIT:
            holding.append({"pid": pid, "pgid": pgid, "start": start, "cmd": cmd.strip()})
    try:
        leader_start = _stat(leader)[1] if leader else None
    except OSError:
        leader_start = None
    # A socket no readable process holds: its holder hid itself (not dumpable) or is not the agent's.
    return {"sockets": len(found), "unseen": len(found - held), "holders": holding, "leader_start": leader_start}
