"""The input classes lenient parsers and set-minded stores let through: each fails its mutant at the first turn
the class applies, the reference passes that turn, and the probes behind them say what they claim."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from staminad.bench.changes import Change, ChangeConstraints, RenameField, transition
from staminad.bench.datetimes import unpadded_probe
from staminad.bench.scenario import ScenarioParams, generate
from staminad.bench.schema import Entity, EnumType, Field, State
from staminad.bench.values import is_valid_datetime, rebound_probes
from staminad.reference.inputmutants import INPUT_MUTANTS
from staminad.reference.mutant import Mutant
from staminad.reference.server import App
from staminad.suite.generate import generate_suite
from staminad.suite.history import History, turn_history
from staminad.suite.inprocess import AppTransport
from staminad.suite.runner import run_suite_blocking
from staminad.suite.strictinputs import near_misses

SEEDS, TURNS = range(12), 30
IN_PROCESS = [m for m in INPUT_MUTANTS if m.removal is None]  # a stale PATCH model needs the agent's memory


def _first_exercised(m: Mutant) -> tuple[int, int, State, History | None]:
    """The first (seed, turn) over SEEDS x TURNS whose state and changes exercise the mutant."""
    for seed in SEEDS:
        scenario = generate(seed, ScenarioParams(turns=TURNS))
        state, history = scenario.initial, None
        for turn in range(TURNS + 1):
            changes = scenario.turns[turn - 1] if turn else []
            if turn:
                after = transition(state, changes)
                history, state = turn_history(history, state, changes, after), after
            if m.exercised(state, changes):
                return seed, turn, state, history
    raise AssertionError(f"{m.bug}: no state in seeds {SEEDS} x {TURNS} turns exercises it")


def _failures(state: State, seed: int, turn: int, history: History | None, bugs: list[str]) -> list[Any]:
    suite = generate_suite(state, seed, turn, history)
    config = {"schema": msgspec.to_builtins(state), "bugs": bugs}
    return run_suite_blocking(suite, AppTransport(App(config))).failures


@pytest.mark.parametrize("mutant", IN_PROCESS, ids=[m.bug for m in IN_PROCESS])
def test_each_lenient_server_fails_the_first_turn_its_class_applies(mutant: Mutant) -> None:
    """The reference passes the first exercising turn; the mutant fails it, under its rule and category."""
    seed, turn, state, history = _first_exercised(mutant)
    assert not _failures(state, seed, turn, history, [])
    failures = _failures(state, seed, turn, history, [mutant.bug])
    assert (mutant.category, mutant.rule) in {(f.category, f.rule) for f in failures}, (seed, turn)


_STAMP = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59))


def _text(t: dt.datetime) -> str:
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d} {t.hour:02d}:{t.minute:02d}:{t.second:02d}"


@settings(max_examples=300, deadline=None)
@given(a=st.none() | _STAMP, b=st.none() | _STAMP)
def test_the_unpadded_probe_is_valid_and_its_slip_still_compares_inside_the_bounds(
    a: dt.datetime | None, b: dt.datetime | None
) -> None:
    """Only the missing zero can reject the slipped value: it sorts inside the bounds and strptime takes it."""
    after, before = (_text(a) if a else None), (_text(b) if b else None)
    if after and before and after > before:
        after, before = before, after
    probe = unpadded_probe(after, before)
    if probe is None:  # only a window under two minutes holds no whole minute strictly inside it
        assert a is not None and b is not None and abs(b - a) < dt.timedelta(minutes=2)
        return
    slipped = probe[:-2] + probe[-1]
    assert is_valid_datetime(probe) and not is_valid_datetime(slipped)
    assert (after or "") <= slipped and (before is None or slipped <= before)
    dt.datetime.strptime(slipped, "%Y-%m-%d %H:%M:%S")  # what a strptime-only check accepts


def test_near_misses_are_all_invalid() -> None:
    """Every near miss of a valid datetime is rejected by the README's format."""
    for value, what in near_misses("2024-01-01 00:00:00", "2024-12-31 23:59:59", "2024-03-04 05:06:07"):
        assert not is_valid_datetime(value), what


_STATE = State(entities=(Entity(name="Box", fields=()),), enums=(EnumType(name="Size", values=("s",)),))


@pytest.mark.parametrize(
    ("old", "new", "valid", "invalid"),
    [
        (Field(name="n", kind="integer", minimum=0), Field(name="n", kind="integer", minimum=5), None, 4),
        (Field(name="n", kind="integer", maximum=10), Field(name="n", kind="integer", maximum=20), 19, None),
        (Field(name="s", kind="string", max_length=3), Field(name="s", kind="string", max_length=2), None, "sss"),
        (
            Field(name="d", kind="datetime", after="2024-01-01 00:00:00"),
            Field(name="d", kind="datetime", after="2023-01-01 00:00:00"),
            "2023-01-01 00:00:00",
            None,
        ),
    ],
)
def test_rebound_probes_find_a_value_each_side_of_a_change(old: Field, new: Field, valid: Any, invalid: Any) -> None:
    """A value the new bounds admit and the old did not, and the reverse, each next to a bound."""
    got_valid, got_invalid = rebound_probes(_STATE, old, new)
    assert got_valid == valid and got_invalid == invalid


def test_a_bounds_change_is_recorded_under_the_fields_name_at_the_end_of_the_turn() -> None:
    """Change the bounds, then rename the field, in one turn: the history names the new field and the old bounds."""
    box = Entity(name="Box", fields=(Field(name="weight", kind="integer", minimum=0, maximum=9),))
    before = State(entities=(box,), enums=())
    changes: list[Change] = [
        ChangeConstraints(entity="Box", field="weight", minimum=1, maximum=20),
        RenameField("Box", "weight", "mass"),
    ]
    history = turn_history(None, before, changes, transition(before, changes))
    assert history.rebounded == (("Box", "mass", box.fields[0]),)
