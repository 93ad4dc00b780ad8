"""The state store: every step of a sweep is written here before the next one starts.

`Store` is the one object the engine and the daemon write through: the connection and its disk-full waits are
`state.database`'s, the sweeps, configurations and scenarios `state.scenarios`'; this module owns the attempts (from
launch to verdict, with per-test results stored as zlib-compressed JSON), the model calls and the infra events.
"""

from __future__ import annotations

import time
import zlib
from typing import Any

import msgspec

from protocol.kinds import AttemptStep, FailureCategory, InfraKind, Outcome
from state.database import row_as
from state.scenarios import ScenarioRecords


class HarnessEnd(msgspec.Struct, frozen=True, kw_only=True):
    """What an attempt's completion marker said (all None but the time when the harness never wrote one)."""

    harness_seconds: float | None
    harness_exit: int | None = None
    harness_signal: int | None = None
    marker_latency: float | None = None
    loc: int | None = None


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """How an attempt ended: `outcome` pass | fail | infra, with the figures known at that point."""

    outcome: Outcome
    infra_kind: InfraKind | None = None
    categories: tuple[FailureCategory, ...] = ()  # stored comma-joined (NULL: none)
    passed_tests: int | None = None
    total_tests: int | None = None
    feedback: str | None = None
    server_seconds: float | None = None
    suite_seconds: float | None = None
    teardown_seconds: float | None = None
    server_log: str | None = None  # the tail of the log of the server start that tested it (bounded by the engine)
    results: Any = None  # the per-test results (JSON-able), stored compressed
    compressed: bytes | None = None  # or the results already so (`suite.verdict`: compressed where the suite ran)


class Progress(msgspec.Struct, frozen=True, kw_only=True):
    """The few attempt columns that say where a scenario stands (cheap to read for a whole sweep)."""

    scenario_id: int
    turn: int
    attempt: int
    infra_try: int
    phase: AttemptStep
    outcome: Outcome | None
    infra_kind: InfraKind | None
    categories: tuple[FailureCategory, ...]
    launched_at: float = 0.0
    finished_at: float | None = None
    resumed_at: float | None = None


class AttemptRow(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    scenario_id: int
    turn: int
    attempt: int
    infra_try: int
    phase: AttemptStep  # launched -> harness_done -> tested
    prompt_kind: str
    prompt: str
    launched_at: float
    harness_exit: int | None = None
    harness_signal: int | None = None
    harness_seconds: float | None = None
    marker_latency: float | None = None
    server_seconds: float | None = None
    suite_seconds: float | None = None
    teardown_seconds: float | None = None
    outcome: Outcome | None = None
    infra_kind: InfraKind | None = None
    categories: tuple[FailureCategory, ...] = ()
    passed_tests: int | None = None
    total_tests: int | None = None
    feedback: str | None = None
    finished_at: float | None = None
    loc: int | None = None
    resumed_at: float | None = None  # when a restarted engine took up the attempt again (see `resumed`)


_ATTEMPT_COLUMNS = [f for f in AttemptRow.__struct_fields__]


class Store(ScenarioRecords):
    """Async access to the database at `path`. Use `async with Store.open(path) as store:`."""

    async def begin_attempt(
        self, scenario_id: int, turn: int, attempt: int, infra_try: int, prompt_kind: str, prompt: str
    ) -> AttemptRow:
        """Record a new attempt as launched and return its row."""
        now = time.time()
        cur = await self._write(
            "INSERT INTO attempts (scenario_id, turn, attempt, infra_try, phase, prompt_kind, prompt, launched_at) "
            "VALUES (?, ?, ?, ?, 'launched', ?, ?, ?)",
            (scenario_id, turn, attempt, infra_try, prompt_kind, prompt, now),
        )
        assert cur.lastrowid is not None
        return AttemptRow(
            id=int(cur.lastrowid),
            scenario_id=scenario_id,
            turn=turn,
            attempt=attempt,
            infra_try=infra_try,
            phase="launched",
            prompt_kind=prompt_kind,
            prompt=prompt,
            launched_at=now,
        )

    async def resumed(self, attempt_id: int) -> float:
        """A restarted engine takes up the launched attempt again now: its turn watchdog runs from this time."""
        now = time.time()
        await self._update_attempt(attempt_id, {"resumed_at": now})
        return now

    async def harness_done(self, attempt_id: int, end: HarnessEnd) -> None:
        """The attempt's harness ended (or was given up on): phase `harness_done` with what is known of it."""
        await self._update_attempt(attempt_id, {"phase": "harness_done", **msgspec.structs.asdict(end)})

    async def tested(self, attempt_id: int, verdict: Verdict) -> None:
        """The attempt's outcome: phase `tested`, finished now; per-test results stored compressed."""
        fields = msgspec.structs.asdict(verdict)
        results, compressed = fields.pop("results"), fields.pop("compressed")
        fields["categories"] = ",".join(verdict.categories) or None  # the column's words (`known_categories`)
        if results is not None:
            fields["results"] = zlib.compress(msgspec.json.encode(results))
        elif compressed is not None:
            fields["results"] = compressed
        await self._update_attempt(attempt_id, {"phase": "tested", **fields, "finished_at": time.time()})

    async def snapshot_taken(self, attempt_id: int, size: int | None, skipped: str = "") -> None:
        """The workspace snapshot after the attempt: its size in bytes, or why none was taken."""
        await self._update_attempt(attempt_id, {"snapshot_bytes": size, "snapshot_skipped": skipped or None})

    async def _update_attempt(self, attempt_id: int, fields: dict[str, object]) -> None:
        # Column names come from `HarnessEnd` and `Verdict` fields (and `snapshot_taken`, `resumed`), never from a
        # caller.
        given = {k: v for k, v in fields.items() if v is not None}
        sets = ", ".join(f"{k} = ?" for k in given)
        await self._write(f"UPDATE attempts SET {sets} WHERE id = ?", (*given.values(), attempt_id))

    async def attempts(self, scenario_id: int) -> list[AttemptRow]:
        cols = ", ".join(_ATTEMPT_COLUMNS)
        async with self.db.execute(
            f"SELECT {cols} FROM attempts WHERE scenario_id = ? ORDER BY turn, attempt, infra_try", (scenario_id,)
        ) as cur:
            rows = await cur.fetchall()
        return [row_as(AttemptRow, _ATTEMPT_COLUMNS, r) for r in rows]

    async def turns_passed(self, scenario_id: int) -> int:
        """How many distinct turns of the scenario have a passing attempt (read from an index, no row)."""
        async with self.db.execute(
            "SELECT COUNT(DISTINCT turn) FROM attempts INDEXED BY attempts_passed "
            "WHERE scenario_id = ? AND outcome = 'pass'",
            (scenario_id,),
        ) as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def latest_turn_attempts(self, scenario_id: int) -> list[AttemptRow]:
        """The attempts of the scenario's latest turn, in order: with `turns_passed`, all an engine step reads.

        Its size is bounded by the configuration (R + 1 attempts, each with its infra retries), not by
        the turn number, so a step costs the same at turn 1,000 as at turn 1.
        """
        cols = ", ".join(_ATTEMPT_COLUMNS)
        async with self.db.execute(
            f"SELECT {cols} FROM attempts WHERE scenario_id = ? AND turn = "
            "(SELECT MAX(turn) FROM attempts WHERE scenario_id = ?) "
            "ORDER BY attempt, infra_try",
            (scenario_id, scenario_id),
        ) as cur:
            rows = await cur.fetchall()
        return [row_as(AttemptRow, _ATTEMPT_COLUMNS, r) for r in rows]

    async def progress(self, sweep_id: str) -> list[Progress]:
        """Every attempt of the sweep, reduced to `Progress`, in scenario and attempt order."""
        cols = ", ".join(f"a.{f}" for f in Progress.__struct_fields__)
        sql = (
            f"SELECT {cols} FROM attempts a JOIN scenarios s ON s.id = a.scenario_id "
            "JOIN configurations c ON c.id = s.config_id WHERE c.sweep_id = ? "
            "ORDER BY a.scenario_id, a.turn, a.attempt, a.infra_try"
        )
        async with self.db.execute(sql, (sweep_id,)) as cur:
            rows = await cur.fetchall()
        return [row_as(Progress, Progress.__struct_fields__, r) for r in rows]

    async def llm_call(
        self,
        scenario_id: int,
        attempt_id: int | None,
        turn: int,
        api: str,
        model: str,
        tokens: tuple[int, int, int],
        cost: float,
        status: int,
        seconds: float,
        waited: float,
        streamed: bool,
        estimated: bool = False,
        flags: tuple[bool, bool, bool] = (False, False, False),
    ) -> None:
        """Record one model call; `tokens` is (input, output, cached input), `estimated` when counted from bytes,
        `flags` (unpriced, abandoned, compaction) as `llm_calls` says."""
        await self._write(
            "INSERT INTO llm_calls (scenario_id, attempt_id, turn, api, model, input_tokens, output_tokens, "
            "cached_tokens, cost, status, seconds, waited, streamed, at, estimated, unpriced, abandoned, compaction) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                scenario_id,
                attempt_id,
                turn,
                api,
                model,
                *tokens,
                cost,
                status,
                seconds,
                waited,
                int(streamed),
                time.time(),
                int(estimated),
                *map(int, flags),
            ),
        )

    async def llm_spend(self, sweep_id: str) -> dict[int, float]:
        """Dollars spent so far per scenario of the sweep (restores the gateway's caps after a restart)."""
        sql = (
            "SELECT l.scenario_id, SUM(l.cost) FROM llm_calls l JOIN scenarios s ON s.id = l.scenario_id "
            "JOIN configurations c ON c.id = s.config_id WHERE c.sweep_id = ? GROUP BY l.scenario_id"
        )
        async with self.db.execute(sql, (sweep_id,)) as cur:
            return {int(r[0]): float(r[1]) for r in await cur.fetchall()}

    async def attempt_results(self, attempt_id: int) -> Any:
        async with self.db.execute("SELECT results FROM attempts WHERE id = ?", (attempt_id,)) as cur:
            row = await cur.fetchone()
        return None if row is None or row[0] is None else msgspec.json.decode(zlib.decompress(row[0]))

    async def infra_event(self, scenario_id: int, turn: int, attempt: int, kind: str, detail: str) -> None:
        await self._write(
            "INSERT INTO infra_events (scenario_id, turn, attempt, kind, detail, at) VALUES (?, ?, ?, ?, ?, ?)",
            (scenario_id, turn, attempt, kind, detail, time.time()),
        )
