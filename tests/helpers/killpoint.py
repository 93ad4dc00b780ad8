"""Processes that open a store the way `staminad run` and `start` do (`check_store`, then `Store.open`: its
creation or migrations) and SIGKILL themselves at the start of their K-th SQL statement, so a test can end a real
process at every write of a migration.

`python -m tests.helpers.killpoint K:DB [K:DB ...]` imports the store's code once, then forks one process per
pair, one after the other. In each, every sqlite3 connection (aiosqlite's too) counts its statements through
`set_trace_callback`, and at the K-th the process kills itself with SIGKILL: nothing runs after it, no rollback,
no close. With K = 0 it never does. For each pair this prints `DB killed` (by SIGKILL), `DB ran N` (finished,
having run N statements) or `DB failed: LINE`.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import traceback
from pathlib import Path
from typing import Any

import anyio

from state.lock import check_store
from state.store import Store

_connect = sqlite3.connect
_count = 0
_kill_at = 0


def _trace(sql: str) -> None:
    global _count
    _count += 1
    if _count == _kill_at:
        os.kill(os.getpid(), signal.SIGKILL)


def _counting_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    conn: sqlite3.Connection = _connect(*args, **kwargs)
    conn.set_trace_callback(_trace)
    return conn


async def _open(db: Path) -> None:
    check_store(db, migrating=True)
    store = await Store.open(db)
    await store.close()


def _child(db: Path, kill_at: int, out: int) -> None:
    """In the forked process: open the store, counting statements; say how it went on `out`; never return."""
    global _kill_at
    _kill_at = kill_at
    sqlite3.connect = _counting_connect  # type: ignore[assignment]  # aiosqlite looks sqlite3.connect up when it connects
    try:
        anyio.run(_open, db)
        line = f"ran {_count}"
    except BaseException as exc:  # noqa: BLE001 (any failure is reported to the test, which fails on it)
        line = "failed: " + " ".join(traceback.format_exception_only(exc)[-1].split())
    os.write(out, line.encode())
    os._exit(0)


def main() -> None:
    for pair in sys.argv[1:]:
        k, _, db = pair.partition(":")
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            _child(Path(db), int(k), write)
        os.close(write)
        with os.fdopen(read, "rb") as said:
            line = said.read().decode()
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
            line = "killed"
        print(f"{db} {line or f'ended with status {status}'}", flush=True)


if __name__ == "__main__":
    main()
