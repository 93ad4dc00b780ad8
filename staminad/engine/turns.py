"""A scenario's turns as its run needs them: the prompt, state and history of one turn at a time.

A running scenario needs only its current turn: the prompt that opens it and the state and history its suite
is made from. `HeldScenario` is the scenario as a running job keeps it, s_0 and every change batch as
msgpack bytes, and `TurnCursor` holds one turn, decoding and applying the next batch to move forward.
Holding the scenario and every turn's state and history as objects instead (about 4,000 per scenario of 100
turns, for every running scenario) made the daemon's heap grow with turns x scenarios, and every full
collection of Python's cycle collector, which stops the event loop while it walks that heap, took hundreds of
milliseconds at 500 scenarios of 20 turns. Bytes are not walked.

`peek` makes the turn after the cursor's without moving it (the next turn's suite is generated while this one
is tested, see `engine.suites`), and keeps it for `at`; at most two turns are held at once.

Turns are pure functions of the scenario, so moving back (an earlier turn asked for again) starts over from
s_0 and gives the same texts and states.
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec

from staminad.bench.changes import Change
from staminad.bench.scenario import Scenario, ScenarioParams, generate
from staminad.bench.schema import State
from staminad.bench.texts import change_prompt, initial_prompt
from staminad.suite.history import History, turn_history

_BATCH = msgspec.msgpack.Decoder(tuple[Change, ...])
_STATE = msgspec.msgpack.Decoder(State)


class HeldScenario(msgspec.Struct, frozen=True, kw_only=True):
    """A scenario as a running job holds it: its seed, and s_0 and each change batch as msgpack bytes."""

    seed: int
    initial_bytes: bytes
    batches: tuple[bytes, ...]  # batches[t - 1] leads from s_(t-1) to s_t

    @classmethod
    def of(cls, scenario: Scenario) -> HeldScenario:
        encode = msgspec.msgpack.encode
        return cls(
            seed=scenario.seed,
            initial_bytes=encode(scenario.initial),
            batches=tuple(encode(batch) for batch in scenario.turns),
        )

    @property
    def turns(self) -> int:
        """How many change turns it has (turn 0, the initial specification, is not one)."""
        return len(self.batches)

    def initial(self) -> State:
        """s_0, decoded afresh."""
        return _STATE.decode(self.initial_bytes)

    def batch(self, turn: int) -> tuple[Change, ...]:
        """The change batch that turn `turn` (1..turns) applies, decoded afresh."""
        return _BATCH.decode(self.batches[turn - 1])


def generated(seed: int, params: dict[str, object]) -> tuple[int, bytes, list[bytes]]:
    """`HeldScenario.of(generate(seed, params))` from plain data to plain data (what a thread or a worker process
    can be handed): the `Scenario` it builds is dropped before it returns, so no caller ever holds its objects."""
    held = HeldScenario.of(generate(seed, msgspec.convert(params, ScenarioParams)))
    return held.seed, held.initial_bytes, list(held.batches)


class Turn(NamedTuple):
    """What turn `number` gives its attempts: the prompt that opens it, s_t, and the history up to it."""

    number: int
    prompt: str
    state: State
    history: History | None


class TurnCursor:
    """One scenario's current turn, moved forward (or back, from s_0) on demand. Not shared between tasks:
    a runner moves its own, one call at a time (off the event loop: moving many turns costs seconds)."""

    def __init__(self, scenario: HeldScenario, language: str) -> None:
        self.scenario, self.language = scenario, language
        self._turn = self._start()
        self._next: Turn | None = None  # the turn after the cursor's, made by `peek` ahead of `at`

    @property
    def turns(self) -> int:
        """The scenario's last turn's number (its change turns; turn 0 is the initial specification)."""
        return self.scenario.turns

    @property
    def current(self) -> Turn:
        """The turn the cursor is at."""
        return self._turn

    def _start(self) -> Turn:
        return Turn(0, initial_prompt(self.language), self.scenario.initial(), None)

    def at(self, number: int) -> Turn:
        """Turn `number` (0..turns); the cursor stays there."""
        if not 0 <= number <= self.turns:
            raise IndexError(f"turn {number} is not in 0..{self.turns}")
        turn = self._turn if self._turn.number <= number else self._start()
        if self._next is not None and turn.number < self._next.number <= number:
            turn = self._next
        while turn.number < number:
            turn = self._after(turn)
        self._turn, self._next = turn, None
        return turn

    def peek(self, number: int) -> Turn:
        """Turn `number` when it is the cursor's or the one after it, without moving the cursor (a retry of the
        current turn still finds it there); `at(number)` then takes it as made."""
        if number == self._turn.number:
            return self._turn
        if number != self._turn.number + 1 or number > self.turns:
            raise IndexError(f"turn {number} is not the one after {self._turn.number} (of {self.turns})")
        if self._next is None or self._next.number != number:
            self._next = self._after(self._turn)
        return self._next

    def _after(self, turn: Turn) -> Turn:
        batch = self.scenario.batch(turn.number + 1)
        text, after = change_prompt(batch, turn.state)
        return Turn(turn.number + 1, text, after, turn_history(turn.history, turn.state, batch, after))


__all__ = ["HeldScenario", "Turn", "TurnCursor", "generated"]
