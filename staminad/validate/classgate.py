"""The input-class gate: every class of the catalogue that applies at a turn is covered by a test of that
turn's suite, from the first turn it applies."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor

import msgspec

from staminad.bench.scenario import Scenario
from staminad.suite.generate import generate_suite
from staminad.suite.history import turn_history


class ScenarioClasses(msgspec.Struct, frozen=True, kw_only=True):
    """For one scenario: per (rule, class), the first turn it applies and every turn it applies but no test covers."""

    seed: int
    first: tuple[tuple[str, str, int], ...]  # (rule, class, turn)
    missed: tuple[tuple[str, str, int], ...]  # (rule, class, turn)
    stray: tuple[tuple[str, str], ...]  # classes tests name that the catalogue lacks


def scenario_classes(scenario: Scenario) -> ScenarioClasses:
    """Walk the scenario's turns, generating each suite, and compare the classes that apply with those covered."""
    from staminad.bench.changes import transition
    from staminad.suite.classes import CATALOGUE, applicable, covered

    known = {(c.rule, c.name) for c in CATALOGUE}
    first: dict[tuple[str, str], int] = {}
    missed: list[tuple[str, str, int]] = []
    stray: set[tuple[str, str]] = set()
    state, history = scenario.initial, None
    for turn in range(len(scenario.turns) + 1):
        if turn:
            batch = scenario.turns[turn - 1]
            after = transition(state, batch)
            history = turn_history(history, state, batch, after)
            state = after
        got = covered(generate_suite(state, scenario.seed, turn, history))
        for cell in sorted(applicable(state)):
            first.setdefault(cell, turn)
            if cell not in got:
                missed.append((*cell, turn))
        stray |= got - known
    return ScenarioClasses(
        seed=scenario.seed,
        first=tuple((r, c, t) for (r, c), t in sorted(first.items())),
        missed=tuple(missed),
        stray=tuple(sorted(stray)),
    )


def _classes_worker(data: bytes) -> ScenarioClasses:
    return scenario_classes(msgspec.json.decode(data, type=Scenario))


def class_coverage(scenarios: Iterable[Scenario], jobs: int) -> list[ScenarioClasses]:
    work = [msgspec.json.encode(s) for s in scenarios]
    if jobs <= 1:
        return [_classes_worker(w) for w in work]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_classes_worker, work))


class ClassRow(msgspec.Struct, frozen=True, kw_only=True):
    rule: str
    klass: str
    text: str
    first: tuple[tuple[int, int], ...]  # (seed, first turn the class applies)
    missed_first: tuple[int, ...]  # seeds where no test covers it at that turn
    missed_later: int  # later (seed, turn) pairs where it applies and no test covers it


class ClassGate(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    rows: tuple[ClassRow, ...]
    failures: tuple[str, ...]


def class_gate(results: list[ScenarioClasses]) -> ClassGate:
    """README rule x input class x first turn: each class that applies must be covered at its first turn (and at
    every later turn where it applies); every class a test names must be in the catalogue."""
    from staminad.bench.readme import RULES
    from staminad.suite.classes import CATALOGUE

    rows, failures = [], []
    for c in sorted(CATALOGUE, key=lambda c: (list(RULES).index(c.rule), c.name)):
        cell = (c.rule, c.name)
        first = tuple((r.seed, t) for r in results for (ru, k, t) in r.first if (ru, k) == cell)
        starts = dict(first)
        missed = [(r.seed, t) for r in results for (ru, k, t) in r.missed if (ru, k) == cell]
        at_first = tuple(sorted({s for s, t in missed if starts.get(s) == t}))
        later = sum(1 for s, t in missed if starts.get(s) != t)
        rows.append(
            ClassRow(rule=c.rule, klass=c.name, text=c.text, first=first, missed_first=at_first, missed_later=later)
        )
        if at_first:
            failures.append(f"[{c.rule}] {c.name}: not exercised at its first turn in seed(s) {list(at_first)}")
        if later:
            failures.append(f"[{c.rule}] {c.name}: applies but not exercised at {later} later turn(s)")
    for r in results:
        failures += [f"[{rule}] {k}: tests name a class the catalogue lacks (seed {r.seed})" for rule, k in r.stray]
    return ClassGate(ok=not failures, rows=tuple(rows), failures=tuple(failures))


def render_class_gate(gate: ClassGate) -> str:
    """The coverage matrix, one row per rule x class: the first turn it applies per seed, then the failures."""
    lines = [f"{'rule':<15} {'class':<24} {'first turn by seed':<34} {'covered':>7}"]
    for r in gate.rows:
        turns = " ".join(f"s{s}:t{t}" for s, t in r.first[:6]) + (" ..." if len(r.first) > 6 else "")
        n = len(r.first)
        mark = "" if not r.missed_first and not r.missed_later else "  FAIL"
        lines.append(
            f"{r.rule:<15} {r.klass:<24} {turns or 'never applies':<34} {n - len(r.missed_first):>3}/{n:<3}{mark}"
        )
    lines += [f"FAIL {f}" for f in gate.failures]
    lines.append("class gate: ok" if gate.ok else f"class gate: {len(gate.failures)} failure(s)")
    return "\n".join(lines)
