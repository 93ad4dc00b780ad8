"""Where the state directory is: the flag, the environment variable and the default, made absolute once."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import UsageError
from protocol.paths import clear_stale_socket, resolve_state_dir, state_dir_flag
from staminad.cli import main


def test_a_relative_flag_is_made_absolute_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--state-dir rel` and `STAMINAD_STATE_DIR=rel` both become `$PWD/rel`."""
    monkeypatch.chdir(tmp_path)
    assert resolve_state_dir(Path("rel")) == tmp_path / "rel"
    monkeypatch.setenv("STAMINAD_STATE_DIR", "envrel")
    assert resolve_state_dir(None) == tmp_path / "envrel"


def test_an_empty_environment_variable_means_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`STAMINAD_STATE_DIR=` falls back to the XDG state home, not the current directory."""
    monkeypatch.setenv("STAMINAD_STATE_DIR", "")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert resolve_state_dir(None) == tmp_path / "xdg" / "staminabench"


@pytest.mark.parametrize(
    "argv", [["status"], ["logs"], ["start"], ["report"], ["export", "--out", "x.csv"], ["view"], ["run", "x.toml"]]
)
def test_an_empty_state_dir_flag_is_refused_in_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """`--state-dir ""` is a usage error (exit 2, one line), not the current directory."""
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--state-dir", ""])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--state-dir: must not be empty" in err


def test_a_home_of_no_user_is_one_line_naming_the_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A `~nosuchuser` state dir is a usage error naming it; `./~nosuchuser/x` and `~/x` resolve as before."""
    with pytest.raises(SystemExit) as exited:
        main(["report", "--state-dir", "~nosuchuser/x"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1
    assert "--state-dir: ~nosuchuser/x starts with ~nosuchuser" in err and "write ./~nosuchuser/x" in err
    monkeypatch.setenv("STAMINAD_STATE_DIR", "~nosuchuser/y")
    with pytest.raises(UsageError, match=r"^STAMINAD_STATE_DIR=~nosuchuser/y starts with ~nosuchuser"):
        resolve_state_dir(None)
    assert main(["report"]) == 2
    assert capsys.readouterr().err.startswith("staminad: error: STAMINAD_STATE_DIR=~nosuchuser/y ")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_state_dir(state_dir_flag("./~nosuchuser/x")) == tmp_path / "~nosuchuser" / "x"
    assert resolve_state_dir(state_dir_flag("~/x")) == tmp_path / "home" / "x"
    monkeypatch.setenv("STAMINAD_STATE_DIR", "./~nosuchuser/y")
    assert resolve_state_dir(None) == tmp_path / "~nosuchuser" / "y"


@pytest.fixture
def short() -> Iterator[Path]:
    """A directory with a path short enough for Unix sockets whatever the test's name."""
    with tempfile.TemporaryDirectory(prefix="sk", dir="/tmp") as d:
        yield Path(d)


def _listening(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(1)
    return sock


def test_only_a_socket_nobody_listens_on_is_removed(short: Path) -> None:
    """Only a stale socket is removed; a file, directory or link in its place is refused in one line and kept."""
    stale = short / "stale.sock"
    _listening(stale).close()  # closed without unlinking: what a viewer killed by SIGKILL leaves
    clear_stale_socket(stale, "pick another --socket")
    assert not stale.exists()
    clear_stale_socket(short / "none.sock", "pick another --socket")
    (short / "staminad.db").write_bytes(b"SQLite format 3\x00 the store")
    (short / "dir").mkdir()
    _listening(short / "s2").close()
    (short / "link").symlink_to(short / "s2")
    for name, kind in (("staminad.db", "not a socket"), ("dir", "a directory"), ("link", "a symbolic link")):
        with pytest.raises(UsageError, match=f"exists and is {kind}; it is left alone: pick another --socket$"):
            clear_stale_socket(short / name, "pick another --socket")
    assert (short / "staminad.db").read_bytes().endswith(b"the store") and (short / "dir").is_dir()
    assert (short / "link").is_symlink() and os.path.exists(short / "s2")


def test_a_live_socket_is_refused_without_naming_who_listens(short: Path) -> None:
    """A socket something listens on (a daemon's, a viewer's) is kept, and the line does not guess which."""
    live = _listening(short / "live.sock")
    try:
        with pytest.raises(UsageError, match=r"is a socket another process is listening on; pick another --socket$"):
            clear_stale_socket(short / "live.sock", "pick another --socket")
        assert (short / "live.sock").exists()
    finally:
        live.close()
