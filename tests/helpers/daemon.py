"""staminad as a separate process, as a user starts it: `staminad start` until its socket answers, and the CLI."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.tiers import needs

CLI = [sys.executable, "-m", "staminad.cli"]


def start(state: Path, runtime: str | None = "local", extra: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
    """`staminad start` on `state` (with `extra` flags), returned once its socket accepts connections (bounded)."""
    needs("sweep", "starts a daemon")
    override = [*(["--runtime", runtime] if runtime else []), *extra]
    # stderr goes to a file: a pipe nobody reads would fill and block the daemon's logging.
    log = state.parent / f"{state.name}.stderr"
    with log.open("ab") as err:
        proc = subprocess.Popen(
            [*CLI, "start", "--state-dir", str(state), *override],
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(log.read_text(errors="replace")[-4000:] or "daemon exited")
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as s:
            s.connect(str(state / "staminad.sock"))
            return proc
        time.sleep(0.05)  # waiting for another process to bind its socket
    raise TimeoutError("daemon did not start")


@contextlib.contextmanager
def daemon(
    state: Path, runtime: str | None = "local", extra: tuple[str, ...] = ()
) -> Iterator[subprocess.Popen[bytes]]:
    """A started daemon for the block; stopped with SIGTERM after it (SIGKILL to its group past a minute)."""
    proc = start(state, runtime, extra)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def cli(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`staminad ARGS --state-dir STATE`, its output captured (bounded)."""
    return subprocess.run([*CLI, *args, "--state-dir", str(state)], capture_output=True, text=True, timeout=120)
