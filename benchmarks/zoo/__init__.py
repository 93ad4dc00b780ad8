"""The server zoo: the reference server's logic served through the HTTP stacks agents pick.

`running(stack, schema)` starts one zoo server as its own process (as the engine starts an agent's
server) and yields its URL; `available()` names the stacks whose optional dependency is installed
(`pip install -e .[zoo]`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SERVE = Path(__file__).with_name("serve.py")
STACKS = ("stdlib-http11", "stdlib-http10", "flask", "starlette-uvicorn", "aiohttp")
NEEDS = {"flask": ("flask",), "starlette-uvicorn": ("starlette", "uvicorn"), "aiohttp": ("aiohttp",)}


def missing(stack: str) -> list[str]:
    """The modules the stack needs that are not installed."""
    return [m for m in NEEDS.get(stack, ()) if importlib.util.find_spec(m) is None]


def available() -> list[str]:
    return [s for s in STACKS if not missing(s)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running(stack: str, schema: Any, timeout: float = 30.0) -> Iterator[str]:
    """Serve `schema` through `stack` in a new process group until the block ends; yields the base URL."""
    with tempfile.TemporaryDirectory(prefix="zoo-") as tmp:
        config = Path(tmp) / "config.json"
        config.write_text(json.dumps({"schema": schema}))
        port = _free_port()
        log = (Path(tmp) / "stderr").open("wb")  # a file, not a pipe: a chatty server never blocks on it
        proc = subprocess.Popen(
            [sys.executable, str(SERVE), stack, "--config", str(config), "--port", str(port)],
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    err = (Path(tmp) / "stderr").read_bytes()[-2000:].decode(errors="replace")
                    raise RuntimeError(f"zoo server {stack} exited with {proc.returncode}: {err}")
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"zoo server {stack} not listening after {timeout} s")
                time.sleep(0.02)  # polling a child process's port; there is nothing to await instead
            yield f"http://127.0.0.1:{port}"
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            log.close()
