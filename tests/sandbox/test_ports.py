"""Port allocation: unique within a process and across every staminabench process on the machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from staminad.sandbox.ports import PortAllocator, PortsExhausted, port_is_free


def test_port_allocator_never_hands_out_a_port_twice(tmp_path: Path) -> None:
    """Ports are unique until released, and the range running out is an error, not a wait.

    The range lies below Linux's ephemeral ports (32768+), so outgoing connections cannot occupy it.
    """
    ports = PortAllocator(31200, 31203, lock_dir=tmp_path / "locks")
    got = {ports.allocate() for _ in range(4)}
    assert len(got) == 4
    with pytest.raises(PortsExhausted):
        ports.allocate()
    ports.release(31201)
    assert ports.allocate() == 31201


_HOLDER = """
import sys, time
from pathlib import Path
from staminad.sandbox.ports import PortAllocator
ports = PortAllocator(31210, 31212, lock_dir=Path(sys.argv[1]))
print(ports.allocate(), flush=True)
time.sleep(300)
"""


def test_a_port_another_process_reserved_is_skipped_until_that_process_dies(tmp_path: Path) -> None:
    """Two allocators on one machine never share a port, even before a server binds it; a crash frees it."""
    locks = tmp_path / "locks"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(locks)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        taken = int(holder.stdout.readline())
        assert taken == 31210 and port_is_free(taken)  # reserved, not bound: a bind check alone would hand it out
        ours = PortAllocator(31210, 31212, lock_dir=locks)
        assert ours.allocate() == 31211
    finally:
        holder.kill()
        holder.communicate()  # reaps it and closes its stdout pipe
    assert PortAllocator(31210, 31210, lock_dir=locks).allocate() == 31210
    assert (locks.stat().st_mode & 0o7777) == 0o1777  # every user's processes share the directory
