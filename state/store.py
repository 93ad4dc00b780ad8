"""The state store: every step of a sweep is written here before the next one starts.

One aiosqlite connection in WAL mode; each write commits at once, so a daemon killed at any
moment loses at most the step it was in. Per-test results are stored as zlib-compressed JSON.
Every write goes through `Store._write`: one the disk refuses (full, read-only) is rolled back and
waits for space (`state.space`), then is made again, so a full disk pauses the writer, never fails it.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import aiosqlite
import anyio
import msgspec

from protocol.errors import UsageError
from protocol.kinds import (
    AttemptStep,
    FailureCategory,
    InfraKind,
    Outcome,
    ScenarioStatus,
    SweepStatus,
    known_categories,
    known_scenario_status,
)
from state.schema import MIGRATIONS
from state.space import DiskWatch, disk_problem

T = TypeVar("T")
READERS = 4  # reads (`Store.read`) at once, each on a connection and a thread of its own


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


class Store:
    """Async access to the database at `path`. Use `async with Store.open(path) as store:`."""

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
    async def open(cls, path: Path) -> Store:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = await aiosqlite.connect(path, timeout=30)
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA synchronous=NORMAL")
        await db.execute("PRAGMA foreign_keys=ON")
        store = cls(db, DiskWatch(path.parent), path)
        await store._migrate()
        return store

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(conn, *args)` in a worker thread on a read-only connection of its own: a read of many queries is
        one hop off the event loop, and waits on none of the writes queued on `db` (WAL: readers never block)."""
        assert self.path is not None, "a store opened on a path"
        return await anyio.to_thread.run_sync(_read, self.path, fn, args, limiter=self._readers)

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        await self.db.close()

    async def _migrate(self) -> None:
        async with self.db.execute("PRAGMA user_version") as cur:
            row = await cur.fetchone()
        version = int(row[0]) if row else 0
        if version > len(MIGRATIONS):
            raise RuntimeError(f"database schema version {version} is newer than this staminad ({len(MIGRATIONS)})")
        for i, sql in enumerate(MIGRATIONS[version:], start=version + 1):
            await self.db.executescript(sql)
            await self.db.execute(f"PRAGMA user_version = {i}")
            await self.db.commit()

    # --- sweeps and scenarios -------------------------------------------------------------------

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

    async def set_sweep_turns(self, sweep_id: str, turns: int) -> None:
        await self._write("UPDATE sweeps SET turns = ? WHERE id = ?", (turns, sweep_id))

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

    # --- attempts -----------------------------------------------------------------------------

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
        return [_row(AttemptRow, _ATTEMPT_COLUMNS, r) for r in rows]

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
        return [_row(AttemptRow, _ATTEMPT_COLUMNS, r) for r in rows]

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
        return [_row(Progress, Progress.__struct_fields__, r) for r in rows]

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
    ) -> None:
        """Record one model call; `tokens` is (input, output, cached input), `estimated` when counted from bytes."""
        await self._write(
            "INSERT INTO llm_calls (scenario_id, attempt_id, turn, api, model, input_tokens, output_tokens, "
            "cached_tokens, cost, status, seconds, waited, streamed, at, estimated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?, ?, ?, ?, ?)",
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


def _read(path: Path, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as conn:
        return fn(conn, *args)


S = TypeVar("S", bound=msgspec.Struct)


def _row(cls: type[S], columns: Iterable[str], row: Iterable[object]) -> S:
    """A row as `cls`, its words checked against their closed sets (a word outside one is a ValidationError, a
    failure category outside its set an `UnknownWord`); the comma-joined categories column becomes its words."""
    fields = dict(zip(columns, row, strict=True))
    if "categories" in fields:
        fields["categories"] = known_categories(fields["categories"])
    return msgspec.convert(fields, cls)


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
