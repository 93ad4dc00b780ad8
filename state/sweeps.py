"""Sweep-level queries of the store that the daemon needs: typed answers, so no SQL lives outside `state`.

Each function takes the open `Store` and commits its own writes, as the store's methods do.
"""

from __future__ import annotations

import msgspec
from aiosqlite import Row

from state.store import Store


class StoredSweep(msgspec.Struct, frozen=True, kw_only=True):
    """A sweep's row: `config` is the sweep file as JSON, `fingerprint` what a resubmit is compared by."""

    id: str
    status: str
    fingerprint: str
    config: str


_COLUMNS = "id, status, fingerprint, config"


def _sweep(row: Row) -> StoredSweep:
    return StoredSweep(id=str(row[0]), status=str(row[1]), fingerprint=str(row[2]), config=str(row[3]))


async def find_sweep(store: Store, sweep_id: str) -> StoredSweep | None:
    async with store.db.execute(f"SELECT {_COLUMNS} FROM sweeps WHERE id = ?", (sweep_id,)) as cur:
        row = await cur.fetchone()
    return None if row is None else _sweep(row)


async def unfinished_sweeps(store: Store) -> list[StoredSweep]:
    """Sweeps a restarted daemon takes up again (running or paused), oldest first."""
    async with store.db.execute(f"SELECT {_COLUMNS} FROM sweeps WHERE status IN ('running', 'paused') "
                                "ORDER BY created_at") as cur:
        return [_sweep(r) for r in await cur.fetchall()]


async def sweep_ids(store: Store) -> list[str]:
    async with store.db.execute("SELECT id FROM sweeps ORDER BY created_at") as cur:
        return [str(r[0]) for r in await cur.fetchall()]


async def release_running(store: Store, sweep_id: str, reason: str) -> None:
    """Scenarios of the sweep left `running` go back to `pending`, with `reason`."""
    await store.db.execute(
        "UPDATE scenarios SET status = 'pending', reason = ? WHERE status = 'running' AND config_id IN "
        "(SELECT id FROM configurations WHERE sweep_id = ?)", (reason, sweep_id))
    await store.db.commit()


async def delete_sweep(store: Store, sweep_id: str) -> None:
    """Remove the sweep and everything recorded under it (a --force-new resubmit)."""
    scenarios = "SELECT s.id FROM scenarios s JOIN configurations c ON s.config_id = c.id WHERE c.sweep_id = ?"
    for statement in (f"DELETE FROM llm_calls WHERE scenario_id IN ({scenarios})",
                      f"DELETE FROM infra_events WHERE scenario_id IN ({scenarios})",
                      f"DELETE FROM attempts WHERE scenario_id IN ({scenarios})",
                      "DELETE FROM scenarios WHERE config_id IN (SELECT id FROM configurations WHERE sweep_id = ?)",
                      "DELETE FROM configurations WHERE sweep_id = ?",
                      "DELETE FROM sweeps WHERE id = ?"):
        await store.db.execute(statement, (sweep_id,))
    await store.db.commit()


class AttemptPrompt(msgspec.Struct, frozen=True, kw_only=True):
    prompt_kind: str
    prompt: str
    feedback: str | None


async def attempt_prompt(store: Store, attempt_id: int) -> AttemptPrompt | None:
    """The prompt an attempt got and the feedback it produced."""
    async with store.db.execute("SELECT prompt_kind, prompt, feedback FROM attempts WHERE id = ?",
                                (attempt_id,)) as cur:
        row = await cur.fetchone()
    return None if row is None else AttemptPrompt(prompt_kind=row[0], prompt=row[1], feedback=row[2])


__all__ = ["AttemptPrompt", "StoredSweep", "attempt_prompt", "delete_sweep", "find_sweep", "release_running",
           "sweep_ids", "unfinished_sweeps"]
