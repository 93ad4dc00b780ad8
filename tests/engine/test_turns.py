"""The turn cursor: a scenario held as bytes and one turn as objects, giving what computing every turn gave."""

from __future__ import annotations

import gc
import types

import msgspec
import pytest

from staminad.bench.scenario import Scenario, ScenarioParams, generate
from staminad.bench.schema import State
from staminad.bench.texts import change_prompt, initial_prompt
from staminad.engine.turns import HeldScenario, TurnCursor, generated
from staminad.suite.history import History, turn_history


def _every_turn(scenario: Scenario, language: str) -> list[tuple[str, bytes, bytes]]:
    """(prompt, encoded state, encoded history) of every turn, computed in one pass from s_0."""
    state, history = scenario.initial, None
    out = [(initial_prompt(language), msgspec.msgpack.encode(state), msgspec.msgpack.encode(history))]
    for batch in scenario.turns:
        text, after = change_prompt(batch, state)
        history = turn_history(history, state, batch, after)
        state = after
        out.append((text, msgspec.msgpack.encode(state), msgspec.msgpack.encode(history)))
    return out


def _seen(cursor: TurnCursor, number: int) -> tuple[str, bytes, bytes]:
    turn = cursor.at(number)
    assert turn.number == number
    return turn.prompt, msgspec.msgpack.encode(turn.state), msgspec.msgpack.encode(turn.history)


@pytest.mark.parametrize("seed", [0, 7])
def test_moving_forward_turn_by_turn_gives_every_turn_as_one_pass_does(seed: int) -> None:
    """Turn by turn, the cursor's prompts, states and histories are those of a pass over the whole scenario."""
    scenario = generate(seed, ScenarioParams(turns=12))
    expected = _every_turn(scenario, "python")
    cursor = TurnCursor(HeldScenario.of(scenario), "python")
    assert [_seen(cursor, n) for n in range(cursor.turns + 1)] == expected


def test_jumps_forward_and_back_give_the_same_turns() -> None:
    """A jump ahead (a resume) and a move back (an earlier turn asked for again) give what a single pass gives."""
    scenario = generate(3, ScenarioParams(turns=10))
    expected = _every_turn(scenario, "typescript")
    cursor = TurnCursor(HeldScenario.of(scenario), "typescript")
    for number in (7, 2, 10, 10, 0, 5):
        assert _seen(cursor, number) == expected[number]
    assert cursor.current.number == 5


def test_a_turn_outside_the_scenario_is_refused() -> None:
    """Asking for a turn before 0 or past the last one raises, and the cursor stays where it was."""
    cursor = TurnCursor(HeldScenario.of(generate(1, ScenarioParams(turns=3))), "python")
    cursor.at(2)
    for number in (-1, 4):
        with pytest.raises(IndexError, match=r"not in 0\.\.3"):
            cursor.at(number)
    assert cursor.current.number == 2


def _reachable(root: object) -> list[object]:
    """Every object `root` keeps alive through its data (not through classes, modules or functions)."""
    seen: dict[int, object] = {}
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type | types.ModuleType | types.FunctionType):
            continue
        seen[id(obj)] = obj
        stack.extend(gc.get_referents(obj))
    return list(seen.values())


def test_the_cursor_keeps_one_turn_of_states_alive() -> None:
    """Once moved on, the cursor keeps the current turn's state and history as objects, and no other turn's."""
    cursor = TurnCursor(HeldScenario.of(generate(2, ScenarioParams(turns=8))), "python")
    cursor.at(8)
    kept = _reachable(cursor)
    states = [o for o in kept if isinstance(o, State)]
    assert states == [cursor.current.state]
    assert [o for o in kept if isinstance(o, History)] == [cursor.current.history]


@pytest.mark.parametrize("seed", [0, 5])
def test_a_held_scenario_gives_back_its_initial_state_and_batches(seed: int) -> None:
    """Decoded from its bytes, a held scenario's s_0 and batches encode as the generated scenario's do."""
    scenario = generate(seed, ScenarioParams(turns=6))
    held = HeldScenario.of(scenario)
    assert (held.seed, held.turns) == (seed, 6)
    assert msgspec.msgpack.encode(held.initial()) == msgspec.msgpack.encode(scenario.initial)
    for turn in range(1, 7):
        assert held.batch(turn) == scenario.turns[turn - 1]


def test_a_scenario_generated_as_plain_data_is_the_held_scenario() -> None:
    """`generated` (what a worker process runs) gives the bytes `HeldScenario.of(generate(...))` holds."""
    params = ScenarioParams(turns=4, sampler="weighted")
    seed, initial, batches = generated(9, msgspec.to_builtins(params))
    assert HeldScenario(seed=seed, initial_bytes=initial, batches=tuple(batches)) == HeldScenario.of(
        generate(9, params)
    )


def test_peeking_at_the_next_turn_leaves_the_cursor_and_is_what_moving_gives() -> None:
    """`peek(n + 1)` gives turn n + 1 as a pass does, the cursor stays at n, and `at(n + 1)` takes it as made."""
    scenario = generate(3, ScenarioParams(turns=6))
    expected = _every_turn(scenario, "python")
    cursor = TurnCursor(HeldScenario.of(scenario), "python")
    cursor.at(2)
    peeked = cursor.peek(3)
    assert cursor.current.number == 2 and cursor.peek(2) is cursor.current
    assert (peeked.prompt, msgspec.msgpack.encode(peeked.state)) == expected[3][:2]
    assert cursor.at(3) is peeked and _seen(cursor, 3) == expected[3]
    with pytest.raises(IndexError):
        cursor.peek(5)
    cursor.at(6)
    with pytest.raises(IndexError):
        cursor.peek(7)
