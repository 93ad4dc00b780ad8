"""systemd notification (Type=notify): READY/STOPPING and watchdog pings, without a dependency."""

from __future__ import annotations

import os
import socket

import anyio


def notify(state: str) -> bool:
    """Send one sd_notify datagram; a no-op outside systemd (no NOTIFY_SOCKET)."""
    path = os.environ.get("NOTIFY_SOCKET")
    if not path:
        return False
    if path.startswith("@"):
        path = "\0" + path[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        try:
            s.connect(path)
            s.sendall(state.encode())
        except OSError:
            return False
    return True


async def watchdog() -> None:
    """Ping the systemd watchdog at half its interval, for as long as the event loop is responsive."""
    usec = os.environ.get("WATCHDOG_USEC")
    if not usec or not usec.isdigit():
        return
    interval = int(usec) / 2e6
    while True:
        notify("WATCHDOG=1")
        await anyio.sleep(interval)
