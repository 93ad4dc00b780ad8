"""`stamina-tui`'s command line: what a user can get wrong ends in one line on stderr and the right exit status."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tui(*args: str) -> subprocess.CompletedProcess[str]:
    """The real entry point on pipes (no terminal), as a user's shell would run it with its output redirected."""
    env = {k: v for k, v in os.environ.items() if k != "TEXTUAL_DRIVER"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.stdout == "", proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("stamina-tui: error: "), proc.stderr
    return lines[0]


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port on 127.0.0.1 that this test holds listening for its duration."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        yield sock.getsockname()[1]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--port", "abc"], "argument --port: 'abc' is not an integer"),
        (["--port", "8_566"], "argument --port: '8_566' is not an integer"),
        (["--socket", "x", "--state-dir", "y"], "not allowed with argument --socket"),
        (["--serve", "--port", "0"], "--port 0 is not a port number"),
        (["--serve", "--port", "70000"], "--port 70000 is not a port number"),
    ],
)
def test_an_argument_error_is_one_line_exit_2(args: list[str], says: str) -> None:
    """Bad arguments print `stamina-tui: error: ... (see --help)` alone, no usage block, exit status 2."""
    proc = _tui(*args)
    line = _one_line(proc)
    assert proc.returncode == 2
    assert says in line and line.endswith("(see --help)"), line


def test_without_a_terminal_it_refuses_in_one_line(tmp_path: Path) -> None:
    """Output that is not a terminal (a pipe): one line pointing at --serve, exit 2, no escape sequences."""
    proc = _tui("--socket", str(tmp_path / "none.sock"))
    line = _one_line(proc)
    assert proc.returncode == 2
    assert "needs a terminal" in line and "--serve" in line, line
    assert "\x1b" not in proc.stderr


@pytest.mark.parametrize(
    ("host", "says"),
    [
        ("999.1.1.1", "--host 999.1.1.1 is not an address to listen on"),  # no such address or name
        ("192.0.2.1", "--host 192.0.2.1 is not an address of this machine"),  # TEST-NET-1: never a local address
    ],
)
def test_serve_on_a_bad_host_is_one_line_exit_2(tmp_path: Path, host: str, says: str) -> None:
    """`--serve --host` that cannot be listened on is refused before textual-serve starts: one line, exit 2."""
    proc = _tui("--serve", "--host", host, "--port", "28566", "--socket", str(tmp_path / "none.sock"))
    line = _one_line(proc)
    assert proc.returncode == 2
    assert says in line and "pick another --host" in line, line


def test_serve_on_a_port_in_use_is_one_line_exit_1(tmp_path: Path, taken_port: int) -> None:
    """`--serve --port` that another socket holds is refused before textual-serve starts: one line, exit 1."""
    proc = _tui("--serve", "--port", str(taken_port), "--socket", str(tmp_path / "none.sock"))
    line = _one_line(proc)
    assert proc.returncode == 1
    assert f"port {taken_port} on 127.0.0.1 is in use; pick another --port" in line, line


def test_a_state_dir_in_the_home_of_no_user_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--state-dir ~nosuchuser/x` or STAMINAD_STATE_DIR so exits 2 naming it, not with RuntimeError's traceback."""
    proc = _tui("--state-dir", "~nosuchuser/x")
    assert proc.returncode == 2 and "~nosuchuser/x starts with ~nosuchuser" in _one_line(proc)
    monkeypatch.setenv("STAMINAD_STATE_DIR", "~nosuchuser/y")
    proc = _tui()
    assert proc.returncode == 2 and "STAMINAD_STATE_DIR=~nosuchuser/y starts with" in _one_line(proc)
