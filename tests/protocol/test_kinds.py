"""The closed sets of words: every infra kind has its words, and a word outside a set is refused by name."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from protocol import decoder
from protocol.events import AttemptTested, InfraFailure
from protocol.kinds import (
    CATEGORIES,
    FAILURE_CATEGORIES,
    INFRA_KINDS,
    OUTCOMES,
    SCENARIO_STATUSES,
    SERVER_KINDS,
    SWEEP_STATUSES,
    UnknownWord,
    known_categories,
    known_infra_kind,
    known_outcome,
    known_scenario_status,
    known_sweep_status,
)
from protocol.messages import Event
from state.store import Store, Verdict
from state.sweeps import find_sweep
from tui.board import INFRA_TEXT, infra_text

pytestmark = pytest.mark.anyio


def test_every_infra_kind_has_its_own_text() -> None:
    """The TUI's table of infra texts covers every kind, with a distinct text for each."""
    texts = [infra_text(kind) for kind in INFRA_KINDS]
    assert set(INFRA_TEXT) == set(INFRA_KINDS) and all(texts) and len(set(texts)) == len(texts)


def test_known_words_pass_and_unknown_ones_are_named() -> None:
    """Each `known_*` returns a word of its set as is, and refuses another naming the set and the known words."""
    for known, words in (
        (known_infra_kind, INFRA_KINDS),
        (known_outcome, OUTCOMES),
        (known_scenario_status, SCENARIO_STATUSES),
        (known_sweep_status, SWEEP_STATUSES),
    ):
        assert [known(w) for w in words] == list(words)
    with pytest.raises(UnknownWord, match=r"unknown infra kind 'gremlins' \(known: harness_crash, "):
        known_infra_kind("gremlins")
    with pytest.raises(UnknownWord, match="unknown sweep status None"):
        known_sweep_status(None)


def test_an_unknown_infra_kind_on_the_wire_fails_to_decode() -> None:
    """A message whose infra kind is outside the set is a decode error, never a plain string let through."""
    data = InfraFailure(
        scenario=1, configuration="c", seed=0, turn=0, attempt=1, infra_try=0, infra_kind="stuck", detail=""
    )
    wire = msgspec.to_builtins(Event(sweep="w", data=data, at=1.0, seq=1))
    assert decoder().decode(msgspec.msgpack.encode(wire)).data == data
    wire["data"]["infra_kind"] = "gremlins"
    with pytest.raises(msgspec.ValidationError, match="infra_kind"):
        decoder().decode(msgspec.msgpack.encode(wire))


async def test_an_unknown_stored_word_is_a_clear_error_when_read_back(tmp_path: Path) -> None:
    """Stored words outside their sets are refused by name; a sweep's row reads as `error` naming the word."""
    async with await Store.open(tmp_path / "s.db") as store:
        await store.ensure_sweep("w", "w", "fp", "{}")
        config = await store.ensure_configuration("w", "c", "reference", 2, "detailed")
        scenario = (await store.ensure_scenario(config, 0)).id
        row = await store.begin_attempt(scenario, 0, 1, 0, "turn", "p")
        await store.tested(row.id, Verdict(outcome="infra", infra_kind="stuck"))
        assert [(a.outcome, a.infra_kind) for a in await store.attempts(scenario)] == [("infra", "stuck")]
        await store.db.execute("UPDATE attempts SET infra_kind = 'gremlins'")
        await store.db.execute("UPDATE scenarios SET status = 'asleep'")
        await store.db.execute("UPDATE sweeps SET status = 'lost'")
        with pytest.raises(msgspec.ValidationError, match=r"\$\.infra_kind"):
            await store.attempts(scenario)
        with pytest.raises(msgspec.ValidationError, match=r"\$\.infra_kind"):
            await store.progress("w")
        with pytest.raises(UnknownWord, match="unknown scenario status 'asleep'"):
            await store.scenarios("w")
        lost = await find_sweep(store, "w")  # a sweep row says what is wrong with it (tests/state/test_sweep_rows.py)
        assert lost is not None and lost.status == "error" and "unknown sweep status 'lost'" in lost.reason


def test_failure_categories_are_the_tests_and_the_servers_each_once() -> None:
    """An attempt's failure categories are every test category and every server kind, no word twice."""
    assert set(FAILURE_CATEGORIES) == set(CATEGORIES) | set(SERVER_KINDS)
    assert len(FAILURE_CATEGORIES) == len(set(FAILURE_CATEGORIES))


def test_stored_categories_read_back_as_their_words_and_an_unknown_one_is_named() -> None:
    """The comma-joined column reads back as a tuple of known words (none for NULL or empty); others are refused."""
    assert known_categories("validation,server_exited") == ("validation", "server_exited")
    assert known_categories(None) == known_categories("") == ()
    with pytest.raises(UnknownWord, match=r"unknown failure category 'pagination' \(known: validation, "):
        known_categories("validation,pagination")


def test_an_unknown_category_on_the_wire_fails_to_decode() -> None:
    """An attempt's categories travel as a tuple of words, each checked when the message is decoded."""
    data = AttemptTested(
        scenario=1,
        configuration="c",
        seed=0,
        turn=0,
        attempt=1,
        passed=False,
        failed_tests=2,
        tests=9,
        categories=("rename", "server_crash"),
        suite_seconds=0.1,
        server_seconds=0.1,
    )
    wire = msgspec.to_builtins(Event(sweep="w", data=data, at=1.0, seq=1))
    assert decoder().decode(msgspec.msgpack.encode(wire)).data == data
    wire["data"]["categories"] = ["rename", "pagination"]
    with pytest.raises(msgspec.ValidationError, match="categories"):
        decoder().decode(msgspec.msgpack.encode(wire))


async def test_categories_are_stored_comma_joined_and_read_back_as_words(tmp_path: Path) -> None:
    """The store keeps categories as one comma-joined column, reads them back as words, and names an unknown one."""
    async with await Store.open(tmp_path / "s.db") as store:
        await store.ensure_sweep("w", "w", "fp", "{}")
        config = await store.ensure_configuration("w", "c", "reference", 2, "detailed")
        scenario = (await store.ensure_scenario(config, 0)).id
        failed = await store.begin_attempt(scenario, 0, 1, 0, "turn", "p")
        await store.tested(failed.id, Verdict(outcome="fail", categories=("rename", "validation")))
        passed = await store.begin_attempt(scenario, 0, 2, 0, "feedback", "p")
        await store.tested(passed.id, Verdict(outcome="pass"))
        async with store.db.execute("SELECT categories FROM attempts ORDER BY id") as cur:
            assert [r[0] for r in await cur.fetchall()] == ["rename,validation", None]
        assert [a.categories for a in await store.attempts(scenario)] == [("rename", "validation"), ()]
        assert [p.categories for p in await store.progress("w")] == [("rename", "validation"), ()]
        await store.db.execute("UPDATE attempts SET categories = 'rename,gremlins' WHERE id = ?", (failed.id,))
        with pytest.raises(UnknownWord, match="unknown failure category 'gremlins'"):
            await store.attempts(scenario)
        with pytest.raises(UnknownWord, match="unknown failure category 'gremlins'"):
            await store.progress("w")
