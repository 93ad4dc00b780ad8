"""Bad input at the CLI's edges gets one line and the right exit status (2 usage, 1 runtime), and loses nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.sweeps import write_sweep

pytestmark = pytest.mark.sweep

CLI = [sys.executable, "-m", "staminad.cli"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def _one_line(done: subprocess.CompletedProcess[str], status: int) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == status and len(lines) == 1 and lines[0].startswith("staminad"), done.stderr
    return lines[0]


def _read_only(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI with `state` read-only: a read-only bind mount for root (who ignores modes), else modes."""
    if os.geteuid() == 0:
        script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
        return subprocess.run(
            ["unshare", "-m", "sh", "-c", script, "sh", str(state), *CLI, *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
    paths = [state, *state.rglob("*")]
    modes = {p: p.stat().st_mode for p in paths}
    try:
        for p in paths:
            p.chmod(modes[p] & ~0o222)
        return _cli(*args)
    finally:
        for p in paths:
            p.chmod(modes[p])


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A state dir holding one finished sweep, and that sweep's file."""
    tmp = tmp_path_factory.mktemp("finished")
    path = write_sweep(tmp, "small", ["reference"], turns=1)
    done = _cli("run", str(path), "--state-dir", str(tmp / "st"), "--quiet")
    assert done.returncode == 0, done.stderr
    return tmp / "st", path


def test_a_read_only_state_dir_refuses_start_and_run_but_still_reports(
    finished: tuple[Path, Path], tmp_path: Path
) -> None:
    """A read-only state dir refuses `start` and `run` in one line, while `report` and `export` still work."""
    state, path = finished
    before = (state / "staminad.db").read_bytes()
    for args in (
        ("start", "--state-dir", str(state), "--runtime", "local"),
        ("run", str(path), "--state-dir", str(state), "--quiet"),
    ):
        line = _one_line(_read_only(state, *args), 1)
        assert f"state directory {state}" in line and "--state-dir" in line
    line = _one_line(_read_only(state, "run", str(path), "--state-dir", str(state / "inner"), "--quiet"), 1)
    assert str(state / "inner") in line
    report = _read_only(state, "report", "--state-dir", str(state))
    assert report.returncode == 0 and "reference R=2 detailed" in report.stdout, report.stderr
    export = _read_only(state, "export", "--state-dir", str(state), "--out", str(tmp_path / "a.csv"))
    assert export.returncode == 0 and (tmp_path / "a.csv").read_text().count("\n") > 1, export.stderr
    assert (state / "staminad.db").read_bytes() == before and not (state / "inner").exists()


def test_export_into_a_missing_directory_is_refused(finished: tuple[Path, Path], tmp_path: Path) -> None:
    """`export --out` into a directory that does not exist, or onto a directory, exits 2 and creates nothing."""
    state, _ = finished
    line = _one_line(_cli("export", "--state-dir", str(state), "--out", str(tmp_path / "no" / "such" / "a.csv")), 2)
    assert str(tmp_path / "no" / "such") in line and not (tmp_path / "no").exists()
    line = _one_line(_cli("export", "--state-dir", str(state), "--out", str(tmp_path)), 2)
    assert "is a directory" in line


def test_scenario_generate_refuses_an_unwritable_out_before_generating(tmp_path: Path) -> None:
    """`-o` that cannot hold a pack (under /proc, a file, a directory of other files) exits 2 in one line."""
    (tmp_path / "file").write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("keep")
    for out in ("/proc/nope", str(tmp_path / "file" / "pack"), str(tmp_path / "full")):
        line = _one_line(_cli("scenario", "generate", "--seeds", "0", "--turns", "1", "-o", out), 2)
        assert out in line
    assert (tmp_path / "full" / "notes.txt").read_text() == "keep"
    line = _one_line(_cli("scenario", "generate", "--language", "cobol", "-o", str(tmp_path / "p")), 2)
    assert "python" in line and not (tmp_path / "p").exists()


def test_done_with_a_marker_in_a_missing_directory_is_refused(tmp_path: Path) -> None:
    """`done --marker` under a markers directory that does not exist exits 2 in one line and writes nothing."""
    marker = tmp_path / "gone" / "control" / "markers" / "job-1.json"
    line = _one_line(_cli("done", "--marker", str(marker)), 2)
    assert str(marker.parent) in line and not (tmp_path / "gone").exists()


def test_export_and_report_never_write_over_the_store_and_ask_before_overwriting(
    finished: tuple[Path, Path], tmp_path: Path
) -> None:
    """`export`/`report --out` never write over the store (even with --force); other files need --force."""
    state, _ = finished
    db = state / "staminad.db"
    before = db.read_bytes()
    link = tmp_path / "link.csv"
    os.link(db, link)
    for out, force in ((db, ()), (db, ("--force",)), (state / "staminad.db-wal", ()), (link, ("--force",))):
        line = _one_line(_cli("export", "--state-dir", str(state), "--out", str(out), *force), 2)
        assert "state directory" in line or "state store" in line, line
    line = _one_line(_cli("report", "--state-dir", str(state), "--out", str(state / "reports")), 2)
    assert "inside the state directory" in line and not (state / "reports").exists()
    assert db.read_bytes() == before
    existing = tmp_path / "old.csv"
    existing.write_text("keep me\n")
    line = _one_line(_cli("export", "--state-dir", str(state), "--out", str(existing)), 2)
    assert "already exists" in line and "--force" in line and existing.read_text() == "keep me\n"
    forced = _cli("export", "--state-dir", str(state), "--out", str(existing), "--force")
    assert forced.returncode == 0 and existing.read_text().startswith("sweep,"), forced.stderr
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "report.md").write_text("keep me\n")
    line = _one_line(_cli("report", "--state-dir", str(state), "--out", str(tmp_path / "rep")), 2)
    assert "already exists" in line and (tmp_path / "rep" / "report.md").read_text() == "keep me\n"


def test_report_into_a_missing_directory_is_refused_like_export(finished: tuple[Path, Path], tmp_path: Path) -> None:
    """`report --out` whose parent does not exist exits 2 in one line and creates no directory tree."""
    state, _ = finished
    line = _one_line(_cli("report", "--state-dir", str(state), "--out", str(tmp_path / "no" / "such")), 2)
    assert str(tmp_path / "no") in line and "does not exist" in line and not (tmp_path / "no").exists()


@pytest.mark.parametrize("command", ["report", "export"])
def test_report_and_export_on_a_store_that_is_not_a_database_exit_1(tmp_path: Path, command: str) -> None:
    """A staminad.db that is not a database is a runtime error for `report` and `export` too: exit 1, one line."""
    state = tmp_path / "st"
    state.mkdir()
    (state / "staminad.db").write_bytes(b"not a database, " * 512)
    extra = ("--out", str(tmp_path / "a.csv")) if command == "export" else ()
    line = _one_line(_cli(command, "--state-dir", str(state), *extra), 1)
    assert "cannot be used" in line and not (tmp_path / "a.csv").exists()


@pytest.mark.parametrize("status", ["99999999999999999999999", "-3", "256"])
def test_done_with_an_exit_status_outside_a_byte_is_refused(tmp_path: Path, status: str) -> None:
    """`done --exit` outside 0..255 exits 2 in one line and writes no marker (the engine could not store it)."""
    marker = tmp_path / "control" / "markers" / "t0000-a01-i00.json"
    marker.parent.mkdir(parents=True)
    line = _one_line(_cli("done", "--marker", str(marker), "--exit", status), 2)
    assert f"--exit {status}" in line and "0..255" in line and not list(marker.parent.iterdir())
    _cli("done", "--marker", str(marker), "--exit", "255").check_returncode()
    assert json.loads(marker.read_text())["exit"] == 255


def test_start_keeps_a_file_where_its_socket_goes(tmp_path: Path) -> None:
    """`start` with a non-socket at STATE/staminad.sock exits 2 naming it and leaves it (it was deleted)."""
    state = tmp_path / "st"
    state.mkdir()
    (state / "staminad.sock").write_text("mine\n")
    done = _cli("start", "--state-dir", str(state))
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and "staminad.sock exists and is not a socket; it is left alone" in last, done.stderr
    assert (state / "staminad.sock").read_text() == "mine\n"


def test_export_never_writes_over_another_store_even_with_force(finished: tuple[Path, Path], tmp_path: Path) -> None:
    """`export --force` onto another store, its -wal/-shm or a locked state dir exits 2 and changes nothing."""
    state, _ = finished
    other = tmp_path / "other"
    other.mkdir()
    store = other / "staminad.db"
    store.write_bytes((state / "staminad.db").read_bytes())
    (other / "staminad.db-wal").write_bytes(b"wal frames")
    (other / "staminad.lock").write_text("123 daemon\n")
    (other / "notes.csv").write_text("keep me\n")
    elsewhere = tmp_path / "copy.sqlite"
    elsewhere.write_bytes(store.read_bytes())
    for out, says in (
        (store, "another staminad state directory"),
        (other / "staminad.db-wal", "another staminad state directory"),
        (other / "notes.csv", "another staminad state directory"),
        (elsewhere, "is an SQLite database"),
    ):
        line = _one_line(_cli("export", "--state-dir", str(state), "--out", str(out), "--force"), 2)
        assert says in line, line
    assert store.read_bytes() == elsewhere.read_bytes() == (state / "staminad.db").read_bytes()
    assert (other / "notes.csv").read_text() == "keep me\n"
    assert (other / "staminad.db-wal").read_bytes() == b"wal frames"


def test_report_checks_every_figure_file_like_the_report(finished: tuple[Path, Path], tmp_path: Path) -> None:
    """The report checks its figure files like itself: existing ones need --force, symlinks are refused."""
    state, _ = finished
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "survival.png").write_text("mine\n")
    line = _one_line(_cli("report", "--state-dir", str(state), "--out", str(rep)), 2)
    assert "survival.png already exists; pass --force" in line and (rep / "survival.png").read_text() == "mine\n"
    assert not (rep / "report.md").exists()
    copy = tmp_path / "copy.db"
    copy.write_bytes((state / "staminad.db").read_bytes())
    (rep / "survival.png").unlink()
    (rep / "failures_all.svg").symlink_to(copy)
    line = _one_line(_cli("report", "--state-dir", str(state), "--out", str(rep), "--force"), 2)
    assert "failures_all.svg is a symbolic link" in line and copy.read_bytes() == (state / "staminad.db").read_bytes()
    assert not (rep / "report.md").exists() and not (rep / "survival.png").exists()
    (rep / "failures_all.svg").unlink()
    (rep / "survival.png").write_text("mine\n")
    forced = _cli("report", "--state-dir", str(state), "--out", str(rep), "--force")
    assert forced.returncode == 0 and (rep / "survival.png").read_bytes().startswith(b"\x89PNG"), forced.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["scenario", "show", "p1", "--seed", "0", "--turn", "1_0"],
        ["scenario", "generate", "--seeds", "0", "--turns", " 5", "--out", "x"],
        ["view", "--port", "8_570"],
        ["logs", "--count", "+1"],
        ["start", "--metrics-port", "9_090"],
        ["start", "--suite-parallel", "\u0663"],
        ["done", "--marker", "m", "--exit", "1_0"],
        ["report", "--bootstrap", "1_000"],
    ],
)
def test_integer_flags_take_ascii_digits_only(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """`int()` alone takes `1_0`, ` 5` and other scripts' digits; every integer flag refuses them, exit 2."""
    from staminad.cli import build_parser

    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1 and "is not an integer (digits 0-9 only)" in err, err


@pytest.mark.parametrize("command", ["report", "export"])
def test_report_and_export_on_a_store_with_no_tables_call_it_empty_not_older(tmp_path: Path, command: str) -> None:
    """A store file holding only SQLite's header (a copy without its -wal) is empty or truncated: exit 1."""
    import sqlite3

    state = tmp_path / "st"
    state.mkdir()
    sqlite3.connect(state / "staminad.db").execute("PRAGMA journal_mode=WAL").connection.close()
    assert (state / "staminad.db").stat().st_size > 0
    extra = ("--out", str(tmp_path / "a.csv")) if command == "export" else ()
    line = _one_line(_cli(command, "--state-dir", str(state), *extra), 1)
    assert "is empty or truncated" in line and "older" not in line and not (tmp_path / "a.csv").exists()
