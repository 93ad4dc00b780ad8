"""An edited sweep file under a stored name: one line naming the file and what changed, exit 2, no hang."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
from pathlib import Path

import pytest

from staminad.daemon.resubmit import differences
from tests.helpers.daemon import CLI, cli, daemon
from tests.helpers.sweeps import write_sweep

pytestmark = pytest.mark.sweep


def _edit(path: Path) -> None:
    path.write_text(path.read_text().replace("turns = 1", "turns = 2"))


def test_differences_name_each_changed_setting() -> None:
    """Nested settings are compared by dotted key, old value then new."""
    old = {"name": "a", "scenarios": {"turns": 1, "seeds": "0"}, "run": {"parallel": 4}}
    new = {"name": "a", "scenarios": {"turns": 2, "seeds": "0"}, "run": {"parallel": 2}}
    assert differences(old, new) == ["run.parallel: 4 -> 2", "scenarios.turns: 1 -> 2"]


def test_run_refuses_an_edited_sweep_in_one_line_and_force_new_replaces_it(tmp_path: Path) -> None:
    """`staminad run` of an edited file: exit 2, one line with the file, the change and both fixes; --force-new runs."""
    path = write_sweep(tmp_path, "edited", ["reference"], turns=1)
    state = tmp_path / "st"
    first = subprocess.run(
        [*CLI, "run", str(path), "--state-dir", str(state), "--quiet"], capture_output=True, text=True, timeout=300
    )
    assert first.returncode == 0, first.stderr
    _edit(path)
    again = subprocess.run(
        [*CLI, "run", str(path), "--state-dir", str(state)], capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 2
    lines = again.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "scenarios.turns: 1 -> 2" in lines[0]
    assert "new `name`" in lines[0] and "--force-new" in lines[0]
    forced = subprocess.run(
        [*CLI, "run", str(path), "--state-dir", str(state), "--force-new", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert forced.returncode == 0, forced.stderr
    assert "replaced the stored sweep edited" in forced.stdout


@pytest.mark.parametrize("force", [False, True])
def test_submit_of_an_edited_sweep_names_the_users_file_and_leaves_the_daemon_serving(
    tmp_path: Path, force: bool
) -> None:
    """Through the daemon: the same one line (the user's file, not `submitted.toml`), and the daemon keeps going."""
    path = write_sweep(tmp_path, "edited", ["reference"], turns=1)
    state = tmp_path / "st"
    with daemon(state) as proc:
        assert cli(state, "submit", str(path)).returncode == 0
        _edit(path)
        while "sweep edited: finished" not in cli(state, "status", "edited").stdout:  # bounded by the test timeout
            assert proc.poll() is None
        refused = cli(state, "submit", str(path), *(["--force-new"] if force else []))
        if force:
            assert refused.returncode == 0, refused.stderr
            assert "replaced the stored sweep" in refused.stdout
        else:
            assert refused.returncode == 2
            lines = refused.stderr.strip().splitlines()
            assert len(lines) == 1 and path.name in lines[0] and "submitted.toml" not in lines[0]
            assert "scenarios.turns: 1 -> 2" in lines[0] and "--force-new" in lines[0]
        assert cli(state, "status").returncode == 0 and proc.poll() is None


def test_version_and_exit_codes(tmp_path: Path) -> None:
    """--version prints the version; a bad argument exits 2, a runtime failure (no daemon) exits 1."""
    version = subprocess.run([*CLI, "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("staminad ")
    assert subprocess.run([*CLI, "start", "--parallel", "x"], capture_output=True, timeout=60).returncode == 2
    assert cli(tmp_path, "status").returncode == 1


def test_a_non_utf8_sweep_file_is_one_line(tmp_path: Path) -> None:
    """`submit` of a file that is not UTF-8 text: one line, exit 2 (checked before any daemon is asked)."""
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'name = "\xff\xfe"\n')
    done = cli(tmp_path, "submit", str(bad))
    assert done.returncode == 2 and "not UTF-8" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_run_on_the_state_dir_of_a_live_daemon_is_refused(tmp_path: Path) -> None:
    """`staminad run` beside a daemon on the same state dir: exit 1, one line pointing at `staminad submit`."""
    path = write_sweep(tmp_path, "beside", ["reference"], turns=1)
    state = tmp_path / "st"
    with daemon(state) as proc:
        done = subprocess.run(
            [*CLI, "run", str(path), "--state-dir", str(state)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 1 and "staminad submit" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and proc.poll() is None


@pytest.mark.parametrize("argv", [["--parallel", "0"], ["--parallel", "-5"], ["--socket-group", "no-such-group-x"]])
def test_bad_start_options_are_one_line_exit_2(tmp_path: Path, argv: list[str]) -> None:
    """A zero or negative --parallel, or an unknown --socket-group: exit 2 with one line, no daemon left running."""
    done = subprocess.run(
        [*CLI, "start", "--state-dir", str(tmp_path / "st"), *argv], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize("command", ["run", "start"])
def test_a_corrupted_store_is_one_line_and_no_hang(tmp_path: Path, command: str) -> None:
    """`run` and `start` on a staminad.db that is not a database: exit 1 with one line, and the process ends."""
    state = tmp_path / "st"
    state.mkdir()
    (state / "staminad.db").write_bytes(b"not a database, " * 512)
    argv = ["run", str(write_sweep(tmp_path, "c", ["reference"], turns=1))] if command == "run" else ["start"]
    done = subprocess.run([*CLI, *argv, "--state-dir", str(state)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "cannot be used" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def _damaged_store(db: Path) -> None:
    """A real SQLite file with many pages, then pages past its header overwritten (its header still reads)."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("CREATE TABLE t (x TEXT)")
        conn.executemany("INSERT INTO t VALUES (?)", [(f"row {i} " * 20,) for i in range(3000)])
        conn.commit()
    with db.open("r+b") as fh:
        fh.seek(30000)
        fh.write(b"\xff" * 10000)
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (0,)  # the header is intact


@pytest.mark.parametrize("command", ["run", "start"])
def test_a_store_damaged_past_its_header_is_refused_by_run_and_start(tmp_path: Path, command: str) -> None:
    """`start`, like `run`, checks the whole store before serving: one damaged past its header exits 1, one line."""
    state = tmp_path / "st"
    state.mkdir()
    _damaged_store(state / "staminad.db")
    argv = ["run", str(write_sweep(tmp_path, "c", ["reference"], turns=1))] if command == "run" else ["start"]
    done = subprocess.run([*CLI, *argv, "--state-dir", str(state)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "cannot be used" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (state / "staminad.sock").exists()
