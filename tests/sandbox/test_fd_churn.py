"""A server closing descriptors while the port's holders are looked for is still found as the listener's holder.

Both scans (the container launcher's, run as the agent, and the local runtime's) list a process's descriptors and
then read each; one closed in between (a connection the server just finished) must skip that descriptor, not the
whole process, or the server's own listener reads as held by nobody visible: `server_left_running` blamed on the
agent in a container, `port_taken` locally (both seen in CI).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from staminad.sandbox import hostprocs
from staminad.sandbox.inside import listening
from tests.helpers import free_port, wait_listening

pytestmark = pytest.mark.slow  # a server churning descriptors, scanned many times (most of its CPU in that server)

SCANS = 300  # each a chance to meet a descriptor closing mid-read; the churn closes thousands a second
TAG = "STAMINA_FD_CHURN_TEST=1"

# Listens on the port, then opens and closes descriptors as fast as it can (as a busy server accepts and closes).
CHURN = textwrap.dedent(
    """
    import os, socket, sys
    fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(16)]  # below the listener's: read before it
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(sys.argv[1])))
    s.listen()
    while True:
        for fd in fds:
            os.close(fd)
        fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(16)]
    """
)


@pytest.fixture
def churning() -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """(port, process): a listener whose process churns descriptors, carrying TAG; killed after the test."""
    port = free_port()
    name, value = TAG.split("=")
    proc = subprocess.Popen([sys.executable, "-c", CHURN, str(port)], env={name: value, "PATH": "/usr/bin:/bin"})
    try:
        wait_listening(port, proc)
        yield port, proc
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_the_launchers_scan_names_a_churning_server_as_the_holder_every_time(
    churning: tuple[int, subprocess.Popen[bytes]],
) -> None:
    """`listening.holders` finds the churning server holding its listener, no socket unseen, in every scan."""
    port, proc = churning
    for _ in range(SCANS):
        found = listening.holders(port, proc.pid)
        assert found["sockets"] == 1 and found["unseen"] == 0, found
        assert [h["pid"] for h in found["holders"]] == [proc.pid]


def test_the_local_scan_names_a_churning_server_as_the_holder_every_time(
    churning: tuple[int, subprocess.Popen[bytes]],
) -> None:
    """`hostprocs.listener_holders` lists the churning server as the listener's holder in every scan."""
    port, proc = churning
    for _ in range(SCANS):
        holders = hostprocs.listener_holders(port, TAG)
        assert holders is not None and [pid for pid, _ in holders] == [proc.pid]
