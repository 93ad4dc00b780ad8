"""The state store's connection: opening the database (once `state.migrate` has given it its schema), writes
committed at once that wait out a full disk, and reads on connections and threads of their own.

One aiosqlite connection in WAL mode; each write commits at once, so a daemon killed at any moment loses at most the
step it was in. Every write goes through `Database.write_all`: one the disk refuses (full, read-only) is rolled back
and waits for space (`state.space`), then is made again, so a full disk pauses the writer, never fails it. What is
written, and read back typed, is `state.scenarios`' and `state.store`'s.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import aiosqlite
import anyio
import msgspec

from protocol.kinds import known_categories
from state.migrate import migrate
from state.space import DiskWatch, disk_problem

T = TypeVar("T")
READERS = 4  # reads (`Database.read`) at once, each on a connection and a thread of its own


class Database:
    """The connection to the database at `path`, its migrations, writes and reads: the base `state.store.Store`
    is opened through (`async with Store.open(path) as store:`)."""

    def __init__(self, db: aiosqlite.Connection, space: DiskWatch, path: Path | None = None) -> None:
        self.db = db
        self.path = path
        self.space = space  # the writes waiting on a full or read-only disk, and why
        # Reads' own threads: a `status` never queues behind the sandboxes' file work in anyio's shared pool.
        self._readers = anyio.CapacityLimiter(READERS)

    async def _write(self, sql: str, params: Any = ()) -> aiosqlite.Cursor:
        """Execute one statement and commit it; a refusal of the disk's waits for space, then retries it."""
        return await self.write_all([(sql, params)])

    async def write_all(self, statements: list[tuple[str, Any]]) -> aiosqlite.Cursor:
        """Statements committed together (the last one's cursor); a write the disk refuses (full, read-only)
        is rolled back whole, waits for space (`state.space`) and is made again."""
        while True:
            try:
                for sql, params in statements:
                    cur = await self.db.execute(sql, params)
                await self.db.commit()
                return cur
            except (sqlite3.OperationalError, OSError) as exc:
                problem = disk_problem(exc, self.space.path)
                if problem is None:
                    raise
                with contextlib.suppress(sqlite3.Error, OSError):
                    await self.db.rollback()
                await self.space.wait(problem)

    @classmethod
    async def open(cls, path: Path) -> Self:
        """The store at `path`, made or migrated to the latest schema first (`state.migrate`: one transaction per
        migration, so a kill at any point leaves it whole at one version)."""
        await anyio.to_thread.run_sync(migrate, path)
        db = await aiosqlite.connect(path, timeout=30)
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA synchronous=NORMAL")
        await db.execute("PRAGMA foreign_keys=ON")
        return cls(db, DiskWatch(path.parent), path)

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(conn, *args)` in a worker thread on a read-only connection of its own: a read of many queries is
        one hop off the event loop, and waits on none of the writes queued on `db` (WAL: readers never block)."""
        assert self.path is not None, "a store opened on a path"
        return await anyio.to_thread.run_sync(_read, self.path, fn, args, limiter=self._readers)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        await self.db.close()


def _read(path: Path, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as conn:
        return fn(conn, *args)


S = TypeVar("S", bound=msgspec.Struct)


def row_as(cls: type[S], columns: Iterable[str], row: Iterable[object]) -> S:
    """A row as `cls`, its words checked against their closed sets (a word outside one is a ValidationError, a
    failure category outside its set an `UnknownWord`); the comma-joined categories column becomes its words."""
    fields = dict(zip(columns, row, strict=True))
    if "categories" in fields:
        fields["categories"] = known_categories(fields["categories"])
    return msgspec.convert(fields, cls)
