"""An uncaught exception inside stamina-tui: the process exits non-zero and the traceback stays on the terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The real entry point, run in a real terminal, with one screen hook replaced by one that raises: the only
# way to make a correct monitor crash on purpose.
CRASH = """
import sys
from tui.screens.overview import OverviewScreen
def boom(self):
    raise RuntimeError("deliberate crash from test_crash")
OverviewScreen.sweeps_loaded = boom
OverviewScreen.on_mount = boom
from tui.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def _read_all(fd: int, proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    """Everything the process writes to its terminal until it exits (bounded in time and size)."""
    out = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(out) < 4_000_000:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed the terminal (EIO on Linux)
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    return bytes(out)


def test_an_uncaught_crash_exits_non_zero_and_leaves_the_traceback(tmp_path: Path) -> None:
    """A screen raising: exit status 1, and the exception's traceback is printed once the terminal is restored."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASH, "--socket", str(tmp_path / "none.sock")],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    os.close(slave)
    try:
        out = _read_all(master, proc, timeout=90).decode("utf-8", errors="replace")
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        os.close(master)
    assert code == 1, out[-3000:]
    restored = out.rfind("\x1b[?1049l")  # the app leaves the alternate screen; what follows stays visible
    assert restored >= 0, out[-3000:]
    after = re.sub(r"\x1b\[[0-9;?<>=]*[A-Za-z]", "", out[restored:])
    assert "Traceback" in after and "RuntimeError: deliberate crash from test_crash" in after, after[-3000:]
    assert "in boom" in after, after[-3000:]  # the frames, not only the message
