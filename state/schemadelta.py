"""What of a migration a store already holds: the statements of it that an older staminad committed one by one
(its `executescript`) before it was killed, found by comparing schemas, so the migration can be finished.

A store's schema is read as items: each table, each column with its declared type, NOT NULL, default and key,
each index and trigger with its SQL. A reference database in memory is given the migrations before, then the
migration's statements one at a time; what each prefix adds is compared with what the store has of everything
the whole migration adds. Only items the migration adds are compared, so a store whose older tables differ
from today's reference in ways that never mattered is not refused for that.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence

Item = tuple[object, ...]


def schema_items(conn: sqlite3.Connection) -> set[Item]:
    """Every table, column, index, view and trigger of the database, as comparable tuples."""
    out: set[Item] = set()
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
    for kind, name, table, sql in rows.fetchall():
        if kind == "table":
            out.add(("table", name))
            quoted = '"' + str(name).replace('"', '""') + '"'
            for _cid, column, decl, notnull, default, pk, hidden in conn.execute(f"PRAGMA table_xinfo({quoted})"):
                out.add(("column", name, column, str(decl).upper(), notnull, default, pk, hidden))
        else:
            out.add((kind, name, table, " ".join(str(sql or "").split())))
    return out


def applied_prefix(conn: sqlite3.Connection, before: Sequence[str], script: Sequence[str]) -> int:
    """How many leading statements of `script` (a migration split into statements) the database on `conn`
    already holds, with nothing of the statements after them; 0 when it holds none, or something that is no
    prefix of the migration (then it is not a half-done migration, and the caller says what failed)."""
    store = schema_items(conn)
    with contextlib.closing(sqlite3.connect(":memory:")) as ref:
        for earlier in before:
            ref.executescript(earlier)
        base = schema_items(ref)
        added: list[set[Item]] = [set()]
        for sql in script:
            ref.execute(sql)
            added.append(schema_items(ref) - base)
    held = added[-1] & store
    if not held:
        return 0
    return next((n for n, items in enumerate(added) if items == held), 0)


__all__ = ["applied_prefix", "schema_items"]
