"""The monitor as people run it: a scripted tmux session (daemon, sweep, TUI) and the textual-serve dashboard."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers import free_port, wait_listening
from tests.helpers.sweeps import write_sweep

ROOT = Path(__file__).resolve().parents[2]


def _pane(session: str, window: str) -> str:
    done = subprocess.run(
        ["tmux", "capture-pane", "-p", "-t", f"{session}:{window}"], capture_output=True, text=True, timeout=10
    )
    return done.stdout


@pytest.mark.tmux
@pytest.mark.sweep
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_scripted_tmux_session_shows_the_sweep_finish(tmp_path: Path) -> None:
    """scripts/tmux-session.sh starts staminad, submits a sweep and opens stamina-tui, which shows it finish."""
    session = f"stamina-test-{os.getpid()}"
    sweep = write_sweep(tmp_path, "tmuxed", ["reference", "mutant:accept-null"], seeds="0-1", turns=1)
    state = tmp_path / "st"
    env = {**os.environ, "STAMINA_TMUX": session}
    try:
        started = subprocess.run(
            [str(ROOT / "scripts" / "tmux-session.sh"), str(sweep), str(state)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert started.returncode == 0, started.stderr
        deadline = time.monotonic() + 120
        screen = ""
        while time.monotonic() < deadline:
            screen = _pane(session, "tui")
            if "tmuxed  finished" in screen and screen.count("2/2") == 2:
                break
            time.sleep(0.2)  # another process (the TUI in tmux) is drawing; nothing here to wait on
        assert "connected to staminad" in screen and "reference R=2 detailed" in screen, screen
        assert "tmuxed  finished" in screen and screen.count("2/2") == 2, screen  # every scenario finished
    finally:
        subprocess.run(
            [sys.executable, "-m", "staminad.cli", "stop", "--state-dir", str(state)], capture_output=True, timeout=60
        )
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, timeout=10)


def test_textual_serve_dashboard_answers_on_loopback(tmp_path: Path) -> None:
    """`stamina-tui --serve` serves the monitor's web page on 127.0.0.1; a bad port is one clear line."""
    bad = subprocess.run(
        [sys.executable, "-m", "tui", "--serve", "--port", "70000"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2
    assert bad.stderr.strip() == "stamina-tui: error: --port 70000 is not a port number (1..65535) (see --help)"
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "--serve", "--port", str(port), "--socket", str(tmp_path / "none.sock")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_listening(port, proc)
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert page.status_code == 200 and "stamina-tui" in page.text
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
