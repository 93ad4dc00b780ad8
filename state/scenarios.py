"""Sweeps, configurations and scenarios as the store writes them, and a scenario read back typed.

`ScenarioRecords` is the part of `state.store.Store` that records what a sweep is made of (its configurations, its
scenarios and their status and sandbox); the attempts made in a scenario are `Store`'s own part.
"""

from __future__ import annotations

import json
import time
from typing import Any

import msgspec

from protocol.errors import UsageError
from protocol.kinds import ScenarioStatus, SweepStatus, known_scenario_status
from state.database import Database


class SweepChanged(UsageError, ValueError):
    """A stored sweep of this name was made from another configuration."""


class StoredScenario(msgspec.Struct, frozen=True, kw_only=True):
    """A scenario as the store holds it (its status and sandbox); `protocol.ScenarioRow` is its view on the wire."""

    id: int
    config_id: int
    seed: int
    status: ScenarioStatus
    turns_passed: int
    reason: str
    sandbox: dict[str, Any]
    infra_grant: int = 0  # extra infra retries granted by an operator (see `grant_infra_retries`)


class ScenarioRecords(Database):
    """The store's writes and reads of sweeps, configurations and scenarios."""

    async def ensure_sweep(self, sweep_id: str, name: str, fingerprint: str, config: str) -> bool:
        """Create the sweep if new; return True if it already existed (submitted before: not proof that it ever ran)."""
        async with self.db.execute("SELECT fingerprint FROM sweeps WHERE id = ?", (sweep_id,)) as cur:
            row = await cur.fetchone()
        if row is not None:
            if row[0] != fingerprint:
                raise SweepChanged(
                    f"sweep {sweep_id} exists with a different configuration: give the sweep another "
                    "name, or replace the stored one with --force-new"
                )
            return True
        await self._write(
            "INSERT INTO sweeps (id, name, fingerprint, config, status, created_at) VALUES (?, ?, ?, ?, 'running', ?)",
            (sweep_id, name, fingerprint, config, time.time()),
        )
        return False

    async def set_sweep_turns(self, sweep_id: str, turns: int, planned: int | None = None) -> None:
        """The sweep's horizon N and, when given, the scenarios per configuration it lays out (`planned`)."""
        sql = "UPDATE sweeps SET turns = ?, planned = COALESCE(?, planned) WHERE id = ?"
        await self._write(sql, (turns, planned, sweep_id))

    async def set_sweep_status(
        self, sweep_id: str, status: SweepStatus, now: float | None = None, reason: str = ""
    ) -> None:
        """The sweep's status at `now` (default: the clock) and why it is so (`reason`: one line, for `error`);
        a pause's span is kept, so an ETA can leave it out.

        `paused` starts a pause (pausing a paused sweep keeps the first start); any other status ends the pause
        under way, adding its span to `paused_seconds`. Every status replaces the reason, so a sweep taken up
        again after an error no longer shows it.
        """
        at = time.time() if now is None else now
        if status == "paused":
            sql = "UPDATE sweeps SET status = ?, reason = ?, paused_at = COALESCE(paused_at, ?) WHERE id = ?"
        else:
            sql = (
                "UPDATE sweeps SET status = ?, reason = ?, "
                "paused_seconds = paused_seconds + COALESCE(MAX(0, ? - paused_at), 0), paused_at = NULL WHERE id = ?"
            )
        await self._write(sql, (status, reason, at, sweep_id))

    async def ensure_configuration(
        self, sweep_id: str, name: str, agent: str, retries: int, feedback: str, model: str = ""
    ) -> int:
        await self._write(
            "INSERT OR IGNORE INTO configurations (sweep_id, name, agent, retries, feedback, model) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (sweep_id, name, agent, retries, feedback, model),
        )
        async with self.db.execute(
            "SELECT id FROM configurations WHERE sweep_id = ? AND name = ?", (sweep_id, name)
        ) as cur:
            row = await cur.fetchone()
        assert row is not None
        return int(row[0])

    async def ensure_scenario(self, config_id: int, seed: int) -> StoredScenario:
        await self._write(
            "INSERT OR IGNORE INTO scenarios (config_id, seed, status, updated_at) VALUES (?, ?, 'pending', ?)",
            (config_id, seed, time.time()),
        )
        async with self.db.execute(
            "SELECT id, config_id, seed, status, turns_passed, reason, sandbox, infra_grant "
            "FROM scenarios WHERE config_id = ? AND seed = ?",
            (config_id, seed),
        ) as cur:
            row = await cur.fetchone()
        assert row is not None
        return _scenario(row)

    async def set_scenario_status(
        self, scenario_id: int, status: ScenarioStatus, *, turns_passed: int | None = None, reason: str | None = None
    ) -> None:
        """The scenario's status, and with it (when given) its turns passed and the reason it ended."""
        fields: dict[str, object] = {"status": status, "turns_passed": turns_passed, "reason": reason}
        await self._update_scenario(scenario_id, fields)

    async def set_turns_passed(self, scenario_id: int, turns_passed: int) -> None:
        await self._update_scenario(scenario_id, {"turns_passed": turns_passed})

    async def set_sandbox(self, scenario_id: int, sandbox: dict[str, Any]) -> None:
        """Where the scenario's sandbox is (runtime, container, root), for the viewer and clean-up."""
        await self._update_scenario(scenario_id, {"sandbox": json.dumps(sandbox)})

    async def _update_scenario(self, scenario_id: int, fields: dict[str, object]) -> None:
        # Column names come from the typed methods above, never from a caller.
        given = {k: v for k, v in fields.items() if v is not None}
        sets = ", ".join(f"{k} = ?" for k in given)
        await self._write(
            f"UPDATE scenarios SET {sets}, updated_at = ? WHERE id = ?", (*given.values(), time.time(), scenario_id)
        )

    async def scenarios(self, sweep_id: str) -> list[tuple[str, StoredScenario]]:
        """(configuration name, scenario) for every scenario of the sweep."""
        sql = (
            "SELECT c.name, s.id, s.config_id, s.seed, s.status, s.turns_passed, s.reason, s.sandbox, "
            "s.infra_grant FROM scenarios s JOIN configurations c ON c.id = s.config_id WHERE c.sweep_id = ? "
            "ORDER BY c.id, s.seed"
        )
        async with self.db.execute(sql, (sweep_id,)) as cur:
            rows = await cur.fetchall()
        return [(str(r[0]), _scenario(r[1:])) for r in rows]

    async def grant_infra_retries(self, scenario_id: int, extra: int) -> None:
        """Give an `infra_failed` scenario `extra` more infra retries and mark it pending again."""
        await self._write(
            "UPDATE scenarios SET infra_grant = infra_grant + ?, status = 'pending', reason = '', "
            "updated_at = ? WHERE id = ?",
            (extra, time.time(), scenario_id),
        )

    async def configuration_retries(self, sweep_id: str) -> dict[str, int]:
        async with self.db.execute(
            "SELECT name, retries FROM configurations WHERE sweep_id = ? ORDER BY id", (sweep_id,)
        ) as cur:
            return {str(r[0]): int(r[1]) for r in await cur.fetchall()}


def _scenario(row: Any) -> StoredScenario:
    return StoredScenario(
        id=row[0],
        config_id=row[1],
        seed=row[2],
        status=known_scenario_status(row[3]),
        turns_passed=row[4],
        reason=row[5],
        sandbox=json.loads(row[6] or "{}"),
        infra_grant=row[7],
    )
