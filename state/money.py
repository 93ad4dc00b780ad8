"""What model calls cost and how exact that is, summed over any group of `llm_calls`: the one reading every view
(status, the TUI, the viewer, report, export) takes, so none shows an estimate as exact or an unpriced call as $0.

A call's money is exact, or `estimated` (tokens counted from bytes: the provider reported none, or the call was
`abandoned` before its usage came), or `unpriced` (its model has no price: cost unknown, stored as 0). A call
the harness made to compact its context (`compaction`) is counted too. A store from before a flag was recorded
reads it as 0.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

import msgspec

from protocol.units import dollars

FLAGS = ("estimated", "unpriced", "abandoned", "compaction")


class CallMoney(msgspec.Struct, frozen=True, kw_only=True):
    """A group of model calls: dollars, tokens (input + output), calls, and how many of them were not exact."""

    cost: float = 0.0
    tokens: int = 0
    calls: int = 0
    estimated: int = 0
    unpriced: int = 0
    abandoned: int = 0
    compactions: int = 0

    def text(self, digits: int = 2) -> str:
        """`$1.23`, `~$1.23 est.`, `$1.23 + 2 unpriced` or `unpriced` (`protocol.units.dollars`)."""
        return dollars(self.cost, self.calls, self.estimated, self.unpriced, digits)


def money_columns(conn: sqlite3.Connection | None = None, alias: str = "l") -> str:
    """The SELECT list that sums `alias` (llm_calls) rows into CallMoney's fields, in its order; `conn` (a reader
    of a store that may be older) reads a flag it lacks as 0, None takes the latest schema."""
    tokens = f"COALESCE(SUM({alias}.input_tokens + {alias}.output_tokens), 0)"
    return f"TOTAL({alias}.cost), {tokens}, COUNT(*), {', '.join(flag_columns(conn, alias))}"


def flag_columns(conn: sqlite3.Connection | None = None, alias: str = "l") -> list[str]:
    """The sums of FLAGS over `alias` (llm_calls) rows, one SELECT expression each (see `money_columns`)."""
    have = set(FLAGS)
    if conn is not None:
        have = {row[1] for row in conn.execute("PRAGMA table_info(llm_calls)")} & have
    return [f"COALESCE(SUM({alias}.{flag}), 0)" if flag in have else "0" for flag in FLAGS]


def money_of(row: Any, start: int = 0) -> CallMoney:
    """The CallMoney in `row` from column `start` on (as `money_columns` selected it)."""
    cost, tokens, calls, estimated, unpriced, abandoned, compactions = row[start : start + 7]
    return CallMoney(
        cost=float(cost or 0.0),
        tokens=int(tokens or 0),
        calls=int(calls or 0),
        estimated=int(estimated or 0),
        unpriced=int(unpriced or 0),
        abandoned=int(abandoned or 0),
        compactions=int(compactions or 0),
    )


def total(parts: Iterable[CallMoney]) -> CallMoney:
    """The sum of several groups."""
    groups = list(parts)
    sums = {f: sum(getattr(p, f) for p in groups) for f in CallMoney.__struct_fields__}
    return CallMoney(**sums)


__all__ = ["FLAGS", "CallMoney", "flag_columns", "money_columns", "money_of", "total"]
