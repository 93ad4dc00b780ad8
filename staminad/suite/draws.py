"""Where a suite's randomness comes from, per attempt: its data and ids, and what each test checks.

Every attempt of a turn runs the same tests (names, rules, categories, and the field or state each
test picks) on data of its own, so a server cannot pass a retry by replaying the answers it gave, or
was told, the attempt before. `SuiteRandom` is the one seeded source a suite draws from:

- the first attempt (attempt 1, as the engine counts them) draws from the stream keyed by (seed, turn),
  exactly as suites did before attempts had data of their own, so its suite (and every result
  recorded against it, and the oracle gate's tuning) stays as it was; its ids are the plain labels;
- attempt k > 1 draws values and ids from a stream keyed by (seed, turn, k), and takes each pick
  (which field a PATCH test changes, which state an action starts from) from the first attempt's
  record, since the first attempt made those picks between its data draws, where no other stream
  can reproduce them.

An infra retry re-runs the same (turn, attempt), so it gets the same data. Functions here take a plain
`random.Random` too, and treat it as a first attempt (tests that build one part of a suite do so).
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

_ID_CHARS = string.ascii_lowercase + string.digits
ID_TOKEN = 6  # characters drawn into a later attempt's ids: 36**6 (~2e9) ids per label


def stream_key(seed: int, turn: int, attempt: int) -> str:
    """The key of an attempt's random stream; the first attempt's is the turn's, as it was before attempts had
    data of their own."""
    return f"suite/{seed}/{turn}" if attempt <= 1 else f"suite/{seed}/{turn}/attempt/{attempt}"


class SuiteRandom(random.Random):
    """One attempt's seeded draws; `picks` records what each test checks (first attempt), `replay` repeats it."""

    def __init__(self, seed: int, turn: int, attempt: int = 1, replay: dict[str, list[str]] | None = None) -> None:
        if attempt > 1 and replay is None:
            raise ValueError("a later attempt replays the first attempt's picks: pass them")
        self.attempt = attempt
        self.replay = replay
        self.picks: dict[str, list[str]] = {}
        self._replayed: dict[str, int] = {}  # per key, how many of its recorded picks were taken
        super().__init__(stream_key(seed, turn, attempt))

    def ident(self, label: str) -> str:
        if self.attempt <= 1:
            return label
        return f"{label}-{''.join(self.choice(_ID_CHARS) for _ in range(ID_TOKEN))}"

    def pick(self, key: str, options: Sequence[T], label: Callable[[T], str]) -> T:
        if self.replay is None:
            chosen = self.choice(options)
            self.picks.setdefault(key, []).append(label(chosen))
            return chosen
        done = self._replayed.get(key, 0)
        self._replayed[key] = done + 1
        recorded = self.replay.get(key, [])
        if done < len(recorded):
            for option in options:
                if label(option) == recorded[done]:
                    return option
        return self.choice(options)


def ident(rng: random.Random, label: str) -> str:
    """An entity id for `label`: the label itself at the first attempt, with a drawn suffix at later ones."""
    return rng.ident(label) if isinstance(rng, SuiteRandom) else label


def pick(rng: random.Random, key: str, options: Sequence[T], label: Callable[[T], str] = str) -> T:
    """What a test checks, among `options`: drawn by the first attempt (as `rng.choice`), replayed by later ones.

    `key` names the test the pick is for and `label` tells options apart across attempts (a field by its
    name: a later attempt's options hold the same fields with other drawn values). Should a recorded
    label be missing from the options, the pick is drawn from this attempt's stream.
    """
    return rng.pick(key, options, label) if isinstance(rng, SuiteRandom) else rng.choice(options)


def skipped(rng: random.Random, key: str) -> bool:
    """Whether this is a later attempt whose first attempt never made pick `key`: it did without the fallback
    that pick is for, so the later attempt should try harder before it falls back."""
    return isinstance(rng, SuiteRandom) and rng.replay is not None and key not in rng.replay
