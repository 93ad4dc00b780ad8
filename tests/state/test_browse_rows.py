"""The viewer's reads (`state.browse`) decode rows into typed Structs; a damaged row is one line naming it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from state import browse
from state.queries import connect_readonly
from state.rows import DamagedRow
from state.store import Store, Verdict
from tests.helpers.viewer import old_store

RESULTS = [{"name": "t_ok", "passed": True}, {"name": "t_bad", "passed": False}]


def _store(state: Path) -> Path:
    """A store with one sweep, configuration and scenario, a tested attempt, an infra event and a model call."""

    async def make() -> None:
        async with await Store.open(state / "staminad.db") as store:
            await store.ensure_sweep("w", "w", "fp", "{}")
            await store.set_sweep_turns("w", 3)
            config = await store.ensure_configuration("w", "c", "reference", 2, "detailed", model="m")
            scenario = (await store.ensure_scenario(config, 7)).id
            await store.set_scenario_status(scenario, "failed", turns_passed=1, reason="turn 1 failed")
            row = await store.begin_attempt(scenario, 0, 1, 0, "turn", "build it")
            verdict = Verdict(
                outcome="fail", categories=("validation",), passed_tests=1, total_tests=2, results=RESULTS
            )
            await store.tested(row.id, verdict)
            await store.infra_event(scenario, 0, 1, "harness_crash", "it fell over")
            await store.llm_call(scenario, row.id, 0, "openai", "m", (10, 5, 2), 0.25, 200, 1.0, 0.0, False)

    state.mkdir(parents=True, exist_ok=True)
    anyio.run(make)
    return state / "staminad.db"


def _damage(db: Path, sql: str) -> None:
    """Run `sql` on the store as a hand edit would, past every check the store makes."""
    conn = sqlite3.connect(db)
    conn.execute(sql)
    conn.commit()
    conn.close()


def test_rows_decode_into_typed_structs(tmp_path: Path) -> None:
    """Every browse read returns Structs whose fields carry the stored values, results and usage included."""
    conn = connect_readonly(_store(tmp_path))
    try:
        (line,) = browse.sweeps(conn)
        assert (line.sweep.id, line.sweep.status, line.sweep.turns, line.statuses, line.attempts) == (
            "w",
            "running",
            3,
            {"failed": 1},
            1,
        )
        (config,) = browse.configurations(conn, "w")
        assert (config.name, config.agent, config.retries, config.model) == ("c", "reference", 2, "m")
        (scenario,) = browse.scenarios(conn, "w")
        assert (scenario.configuration, scenario.seed, scenario.status, scenario.turns_passed) == ("c", 7, "failed", 1)
        detail = browse.scenario(conn, "w", "c", 7)
        assert detail is not None and (detail.agent, detail.retries, detail.feedback) == ("reference", 2, "detailed")
        (attempt,) = browse.attempts(conn, scenario.id)
        assert (attempt.phase, attempt.outcome, attempt.total_tests, attempt.tests) == ("tested", "fail", 2, RESULTS)
        (progress,) = browse.progress(conn, "w")
        assert (progress.scenario_id, progress.outcome, progress.categories) == (scenario.id, "fail", ("validation",))
        (event,) = browse.infra_events(conn, scenario.id)
        assert (event.kind, event.detail) == ("harness_crash", "it fell over")
        usage = browse.usage_by_attempt(conn, scenario.id)[attempt.id]
        assert (usage.calls, usage.input_tokens, usage.cached_tokens, usage.cost) == (1, 10, 2, 0.25)
    finally:
        conn.close()


def test_a_store_from_the_first_schema_fills_later_fields_with_their_defaults(tmp_path: Path) -> None:
    """Columns later migrations added read as their field's default in a store written before them."""
    conn = connect_readonly(old_store(tmp_path) / "staminad.db")
    try:
        sweep = browse.sweep(conn, "old")
        assert sweep is not None and (sweep.turns, sweep.paused_at, sweep.reason) == (None, None, "")
        assert [c.model for c in browse.configurations(conn, "old")] == [""]
        (scenario,) = browse.scenarios(conn, "old")
        (attempt,) = browse.attempts(conn, scenario.id)
        assert (scenario.infra_grant, attempt.loc, attempt.finished_at, attempt.tests) == (0, None, None, [])
    finally:
        conn.close()


def test_an_unknown_stored_word_is_one_line_naming_the_row_and_the_known_words(tmp_path: Path) -> None:
    """A scenario status outside its closed set is a DamagedRow naming the scenario, the word and the known words."""
    db = _store(tmp_path)
    _damage(db, "UPDATE scenarios SET status = 'exploded'")
    conn = connect_readonly(db)
    try:
        with pytest.raises(DamagedRow) as raised:
            browse.scenarios(conn, "w")
        with pytest.raises(DamagedRow) as listed:
            browse.sweeps(conn)
    finally:
        conn.close()
    line = str(raised.value)
    assert "\n" not in line and "scenario 1 (seed 7 of configuration 'c')" in line, line
    assert "unknown status 'exploded'" in line and "pending, running, done" in line, line
    assert "sweep 'w'" in str(listed.value) and "unknown scenario status 'exploded'" in str(listed.value)


def test_a_value_of_the_wrong_type_is_one_line_naming_the_row_and_the_field(tmp_path: Path) -> None:
    """An attempt whose turn holds text is a DamagedRow naming the attempt, the field and the value."""
    db = _store(tmp_path)
    _damage(db, "UPDATE attempts SET turn = 'soon'")
    conn = connect_readonly(db)
    try:
        with pytest.raises(DamagedRow) as raised:
            browse.attempts(conn, 1)
    finally:
        conn.close()
    line = str(raised.value)
    assert "\n" not in line and line.startswith("attempt 1 in the store cannot be read: turn 'soon'"), line


def test_an_unknown_stored_failure_category_is_one_line_naming_the_attempt(tmp_path: Path) -> None:
    """An attempt whose categories column holds a word outside the set is a DamagedRow naming the attempt and word."""
    db = _store(tmp_path)
    _damage(db, "UPDATE attempts SET categories = 'validation,gremlins'")
    conn = connect_readonly(db)
    try:
        with pytest.raises(DamagedRow) as raised:
            browse.attempts(conn, 1)
        with pytest.raises(DamagedRow) as progress:
            browse.progress(conn, "w")
    finally:
        conn.close()
    for line in (str(raised.value), str(progress.value)):
        assert "\n" not in line and line.startswith("attempt 1 in the store cannot be read:"), line
        assert "'gremlins'" in line and "validation" in line, line


def test_report_on_a_store_with_an_unknown_category_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`staminad report` over a damaged categories column says the word in one line and exits 1, no traceback."""
    from staminad.cli import main

    db = _store(tmp_path)
    _damage(db, "UPDATE attempts SET categories = 'gremlins'")
    _damage(db, "UPDATE sweeps SET status = 'finished'")
    assert main(["report", "--state-dir", str(tmp_path), "--bootstrap", "100"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "unknown failure category 'gremlins'" in err, err
