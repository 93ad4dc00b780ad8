"""One scenario's reference trajectory: s_0 and the change batches a_1..a_N, drawn from a seed.

The trajectory depends only on (seed, parameters) and the generator version; states along it are
recomputed by replaying the changes, so a pack stores s_0 and the changes, never every state.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from functools import cached_property

import msgspec

from staminad.bench.changes import Change, transition
from staminad.bench.naming import Namer, NamingMode
from staminad.bench.sampler import SamplerName, initial_state, sample_turn, weights_for
from staminad.bench.schema import State

# Bumped whenever the same parameters would produce a different trajectory or texts (a pack made by another
# version is refused). 2: coherent themed names, no self-cancelling change requests, removal tests. 3: texts built
# not to trip a reader (null guards on nullable fields only, no two enum types alike, one meaning per field name,
# no name nested in another, counts that agree with their nouns) and README rules for non-finite numbers,
# near-miss datetimes, repeated ids in lists and a PATCH holding no current field.
GENERATOR_VERSION = "3"
# What seeds the random draws: kept when the version moves, so a seed keeps drawing the same choices where the
# generator's rules did not change.
RNG_EPOCH = "1"


class ScenarioParams(msgspec.Struct, frozen=True, kw_only=True):
    """Everything besides the seed that fixes a trajectory."""

    turns: int = 100
    sampler: SamplerName = "uniform"
    naming: NamingMode = "themed"
    changes_per_turn: int = 5
    weights: dict[str, float] | None = None
    language: str = "python"


class Scenario(msgspec.Struct, frozen=True, kw_only=True, dict=True):
    """s_0 and the change batches. `dict=True` lets `steps` be cached per (immutable) scenario; it is
    never encoded."""

    seed: int
    initial: State
    turns: tuple[tuple[Change, ...], ...]  # turns[t-1] is a_t

    @cached_property
    def steps(self) -> tuple[tuple[State, ...], ...]:
        """The states around every change: `steps[t-1][i]` is the state before a_t's i-th change and
        `steps[t-1][-1]` is s_t. `generate(keep_steps=True)` fills this in from the states it drew the
        changes against, so rendering a fresh scenario's prompts does not validate and apply every change
        again."""
        out: list[tuple[State, ...]] = []
        state = self.initial
        for batch in self.turns:
            states = [state]
            for change in batch:
                change.validate(states[-1])
                states.append(change.apply(states[-1]))
            out.append(tuple(states))
            state = states[-1]
        return tuple(out)

    def states(self) -> Iterator[State]:
        """s_0, s_1, ..., s_N."""
        state = self.initial
        yield state
        for batch in self.turns:
            state = transition(state, batch)
            yield state

    def state_at(self, turn: int) -> State:
        if not 0 <= turn <= len(self.turns):
            raise ValueError(f"turn {turn} is outside 0..{len(self.turns)}")
        for t, state in enumerate(self.states()):
            if t == turn:
                return state
        raise AssertionError("unreachable")


def generate(
    seed: int, params: ScenarioParams, weights: Mapping[str, float] | None = None, *, keep_steps: bool = False
) -> Scenario:
    """Draw s_0 with p0 and N turns with pi_env; the same inputs give the same scenario anywhere.

    `keep_steps`: the scenario keeps the states the changes were drawn against as its `steps`, for a caller
    that renders every prompt next (a pack). Off by default: a running scenario would hold five states a
    turn (tens of MB at 1,000 turns) that the engine, which renders one turn at a time, never reads.
    """
    rng = random.Random(f"staminabench/{RNG_EPOCH}/{seed}/{params.naming}/{params.sampler}")
    namer = Namer(params.naming, rng)
    w = weights_for(params.sampler, weights if weights is not None else params.weights)
    state = initial_state(rng, namer)
    initial = state
    turns: list[tuple[Change, ...]] = []
    steps: list[tuple[State, ...]] = []
    age = 0
    for _ in range(params.turns):
        trail = [state] if keep_steps else None
        changes, state = sample_turn(state, rng, namer, w, params.changes_per_turn, age, trail)
        age += len(changes)
        turns.append(tuple(changes))
        if trail is not None:
            steps.append(tuple(trail))
    scenario = Scenario(seed=seed, initial=initial, turns=tuple(turns))
    if keep_steps:
        scenario.__dict__["steps"] = tuple(steps)  # what `Scenario.steps` would recompute, kept from the draw
    return scenario
