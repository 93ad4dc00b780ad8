"""A member of the daemon's socket group reads the store live: `report`, `export` and the viewer show the rows still
in the writer's WAL, as another uid that cannot write the state directory; a store it cannot read live is one line.

Real uids and a real group (`groupadd`, removed after; so it needs root). The writer and the reader run in
children forked from this process that drop to their uid, gid and groups, as tests/daemon/test_group_access.py
does: the interpreter of this checkout may live where those uids cannot execute it (/root, mode 0700). The writer
does what the daemon does with `--socket-group` (`share_state_dir`, `Store.open`, `share_store`), under umask 077,
and keeps the store open (its WAL uncheckpointed) while the reader reads.
"""

from __future__ import annotations

import contextlib
import grp
import os
import shutil
import sqlite3
import subprocess
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from starlette.testclient import TestClient

from staminad.cli import main
from staminad.daemon.access import share_state_dir, share_store
from staminad.viewer.app import create_app
from state import Store
from tests.helpers.reports import fill_store

pytestmark = [
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("groupadd") is None,
        reason="changing to other uids and making a group (groupadd) needs root and the shadow tools",
    ),
    pytest.mark.slow,  # nine reports, exports and viewer pages over a 246-attempt sweep: ~6 s of CPU
]

WRITER, READER = 61_001, 61_002  # uids no account needs: the kernel checks numbers


@contextlib.contextmanager
def _group() -> Iterator[tuple[str, int]]:
    """A throwaway group (name, gid), removed afterwards."""
    name = f"sbr{os.getpid() % 100_000}"
    subprocess.run(["groupadd", name], check=True, capture_output=True, timeout=60)
    try:
        yield name, grp.getgrnam(name).gr_gid
    finally:
        subprocess.run(["groupdel", name], capture_output=True, timeout=60)


def _fork(uid: int, gid: int, groups: list[int], work: Callable[[int, int], None]) -> tuple[int, int, int]:
    """`work(to_parent, from_parent)` in a child with these credentials -> (pid, its reading end, its writing end)."""
    up_r, up_w = os.pipe()
    down_r, down_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 70
        try:
            os.close(up_r)
            os.close(down_w)
            os.setgroups(groups)
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            work(up_w, down_r)
            status = 0
        except BaseException:  # noqa: BLE001 - the child reports whatever stopped it
            os.write(up_w, traceback.format_exc().encode())
        finally:
            os._exit(status)
    os.close(up_w)
    os.close(down_r)
    return pid, up_r, down_w


def _said(fd: int) -> str:
    """One message from a child (it writes it in one go, then waits or ends)."""
    return os.read(fd, 1 << 20).decode(errors="replace")


def _writer(state: Path, group: str) -> Callable[[int, int], None]:
    """The daemon's part: share the state dir and store with `group`, write sweep `fixed`, say `ready`, write sweep
    `later` when told, say `ready`, and close the store (checkpointing its WAL away) when told, saying `closed`."""

    async def write(up: int, down: int) -> None:
        share_state_dir(state, group)
        async with await Store.open(state / "staminad.db") as store:
            share_store(state / "staminad.db", group)
            await store.db.execute("PRAGMA wal_autocheckpoint=0")  # every row stays in the WAL while it is open
            await fill_store(store)
            os.write(up, b"ready")
            os.read(down, 1)
            await store.ensure_sweep("later", "later", "fp2", "{}")
            await store.set_sweep_status("later", "running")
            os.write(up, b"ready")
            os.read(down, 1)
        os.write(up, b"closed")

    def work(up: int, down: int) -> None:
        os.umask(0o077)  # the strictest a daemon's user may have: the sharing must not depend on it
        anyio.run(write, up, down)

    return work


def _read_all(state: Path, out: Path) -> Callable[[], str]:
    """What a reader sees: `report`'s sweeps line, `export`'s rows and the viewer's front page, with exit statuses."""

    def read() -> str:
        csv = out / f"export-{os.getuid()}.csv"
        report = main(["report", "--state-dir", str(state)])
        export = main(["export", "--state-dir", str(state), "--out", str(csv), "--force"])
        rows = csv.read_text().count("\n") if export == 0 else -1
        page = TestClient(create_app(state)).get("/").text
        sweeps = [name for name in ("fixed", "later") if f">{name}<" in page or f"{name}</a>" in page]
        unreadable = "Store not readable live" in page
        return f"report={report} export={export} rows={rows} viewer={','.join(sweeps)} unreadable={unreadable}"

    return read


def _as_reader(gid: int, read: Callable[[], str]) -> tuple[str, str]:
    """`read()` run as the group member -> (its result line, everything it printed)."""
    made, name = tempfile.mkstemp(dir="/tmp")
    os.close(made)
    capture = Path(name)
    os.chown(capture, READER, -1)

    def work(up: int, _down: int) -> None:
        with (
            capture.open("w") as printed,
            contextlib.redirect_stdout(printed),
            contextlib.redirect_stderr(printed),
        ):
            line = read()
        os.write(up, line.encode())

    pid, up, down = _fork(READER, READER, [gid], work)
    line = _said(up)
    os.waitpid(pid, 0)
    os.close(up)
    os.close(down)
    printed = capture.read_text()
    capture.unlink()
    return line, printed


def _file_alone(db: Path) -> int:
    """How many sweeps the database file holds without its WAL (what an immutable read saw)."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)) as conn:
        has = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sweeps'").fetchone()
        return int(conn.execute("SELECT COUNT(*) FROM sweeps").fetchone()[0]) if has else 0


def test_a_group_member_reads_the_live_store_and_is_told_when_it_cannot() -> None:
    """Rows still in the writer's WAL reach a member's report, export and viewer; an unreadable -shm is one line."""
    base = Path(tempfile.mkdtemp(prefix="sb-reads-", dir="/tmp"))  # pytest's tmp_path is root's alone (0700)
    try:
        base.chmod(0o755)
        state, out = base / "st", base / "out"
        state.mkdir()
        out.mkdir()
        os.chown(state, WRITER, -1)
        os.chown(out, READER, -1)
        db = state / "staminad.db"
        with _group() as (group, gid):
            read = _read_all(state, out)
            pid, up, down = _fork(WRITER, gid, [], _writer(state, group))
            try:
                assert _said(up) == "ready"
                assert _file_alone(db) == 0  # everything but the schema is still in the WAL
                for name in ("staminad.db", "staminad.db-wal", "staminad.db-shm"):
                    mode = (state / name).stat().st_mode & 0o777
                    assert mode == 0o640, (name, oct(mode))  # group-readable, never group-writable
                owner = read()  # as the daemon's side sees it (and the lazy imports done while /root is reachable)
                assert "viewer=fixed unreadable=False" in owner and "report=0 export=0" in owner, owner
                line, printed = _as_reader(gid, read)
                assert line == owner, printed

                os.write(down, b"n")
                assert _said(up) == "ready"
                assert _file_alone(db) == 0
                line, printed = _as_reader(gid, read)
                assert "viewer=fixed,later unreadable=False" in line and "report=0" in line, printed

                (state / "staminad.db-shm").chmod(0o600)  # as a daemon from before share_store left it
                line, printed = _as_reader(gid, read)
                assert "report=1 export=1" in line and "viewer= unreadable=True" in line, printed
                refusals = [p for p in printed.splitlines() if "staminad.db-shm is not readable by you" in p]
                assert len(refusals) == 2 and "--socket-group" in refusals[0], printed
                (state / "staminad.db-shm").chmod(0o640)

                os.write(down, b"c")
                assert _said(up) == "closed"
                os.close(down)
            finally:
                with contextlib.suppress(OSError):
                    os.close(down)  # a writer still waiting reads the end of its pipe and finishes
                os.waitpid(pid, 0)
                os.close(up)
            assert not (state / "staminad.db-wal").exists() and _file_alone(db) == 2
            line, printed = _as_reader(gid, read)  # no writer: the file holds it all
            assert "viewer=fixed,later unreadable=False" in line and "report=0" in line, printed
    finally:
        shutil.rmtree(base, ignore_errors=True)
