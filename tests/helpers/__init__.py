"""Helpers shared by tests: free ports, and real HTTP servers started in threads or processes."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[Any] | None = None, timeout: float = 20.0) -> None:
    """Block until something accepts TCP connections on the port (bounded; fails if the process dies)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.02)  # polling a port that is not up yet; not synchronising with our own code
    raise TimeoutError(f"nothing listens on {port} after {timeout} s")


@contextlib.contextmanager
def listening(argv: list[str], port: int, cwd: Path | None = None) -> Iterator[str]:
    """Run a server command in its own session until it listens on `port`; kill its process group after."""
    proc = subprocess.Popen(argv, cwd=cwd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def run_server_sh(workspace: Path) -> contextlib.AbstractContextManager[str]:
    """`bash run_server.sh <port>` in the workspace, as the engine starts an agent's server."""
    port = free_port()
    return listening(["bash", "run_server.sh", str(port)], port, cwd=workspace)


def get_json(url: str) -> object:
    return httpx.get(url, timeout=5).json()
