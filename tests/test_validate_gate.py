"""The oracle gate run in CI: on 10 scenarios x 100 turns the reference passes every turn and every README
rule's mutants are caught at the first turn that can exercise them, with the failure category they should produce."""

from __future__ import annotations

import os

import pytest

from staminad.bench.readme import RULES
from staminad.bench.scenario import ScenarioParams
from staminad.reference.mutants import MUTANTS
from staminad.validate import (
    ALL_AGENTS,
    UNTESTABLE,
    AgentOutcome,
    render_gate,
    rule_gate,
    scenarios_for,
    validate,
    verdicts,
)


# ~6 min of CPU: on a busy 2-core machine (two CPU burners beside it) past the default 300 s bound, never a hang.
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_reference_passes_and_every_rule_is_caught_at_its_first_exercisable_turn() -> None:
    """`staminad validate --seeds 0-9 --turns 100`: reference 100%, every mutant caught on time, right category."""
    params = ScenarioParams(turns=100)
    outcomes = validate(scenarios_for(list(range(10)), params, None), "python", ALL_AGENTS, os.cpu_count() or 1)
    table = verdicts(outcomes, params.turns)
    assert [v.agent for v in table] == ALL_AGENTS
    bad = [f"{v.agent}: {v.summary}" for v in table if not v.ok]
    assert not bad, bad
    gate = rule_gate(outcomes)
    assert gate.ok, render_gate(gate)
    assert all(v.caught >= 1 for v in table[1:]), [v.agent for v in table[1:] if v.caught == 0]


def _outcome(bug: str, seed: int, exercised: int | None, caught: int | None, category: str = "") -> AgentOutcome:
    m = next(m for m in MUTANTS if m.bug == bug)
    return AgentOutcome(
        agent=bug,
        seed=seed,
        turns_passed=caught or 0,
        caught_at=caught,
        exercised_at=exercised,
        categories=(category or m.category,) if caught is not None else (),
    )


def test_gate_fails_for_survivors_late_catches_early_catches_and_wrong_categories() -> None:
    """Each way a mutant can miss its turn is one failure line naming the rule, the mutant and the seed."""
    outcomes = [
        _outcome("length-bytes", 0, 0, 0),
        _outcome("length-bytes", 1, 2, None),
        _outcome("patch-not-atomic", 0, 1, 3),
        _outcome("list-envelope", 0, None, 0),
        _outcome("reset-noop", 0, 0, 0, category="validation"),
    ]
    gate = rule_gate(outcomes, complete=False)
    assert not gate.ok
    assert set(gate.failures) == {
        "[update] patch-not-atomic seed 0: caught late: at turn 3, exercisable from turn 1",
        "[list] list-envelope seed 0: caught at turn 0 but never marked exercisable (predicate too narrow)",
        "[reset] reset-noop seed 0: wrong category: validation instead of missing_feature",
        "[length] length-bytes seed 1: survives: exercisable from turn 2, never caught",
    }
    length = next(r for r in gate.rules if r.rule == "length")
    assert length.first == (0, 0) and not length.ok


def test_gate_needs_a_mutant_for_every_testable_rule_when_the_whole_catalogue_runs() -> None:
    """Every README rule is either declared untestable (with a reason) or has a mutant; a missing one fails."""
    assert set(UNTESTABLE) <= set(RULES) and all(UNTESTABLE.values())
    gate = rule_gate([_outcome("length-bytes", 0, 0, 0)], complete=True)
    missing = {f.split("]")[0][1:] for f in gate.failures if "no mutant" in f}
    assert missing == set(RULES) - set(UNTESTABLE) - {"length"}


def test_validate_command_prints_the_rule_table_and_json() -> None:
    """`staminad validate` prints a row per rule and, with --json, the gate with its verdict."""
    import json
    import subprocess
    import sys

    argv = [
        sys.executable,
        "-m",
        "staminad.cli",
        "validate",
        "--agents",
        "reference,length-bytes,list-envelope",
        "--seeds",
        "0",
        "--turns",
        "1",
        "--jobs",
        "1",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert any(line.startswith("length ") and "length-bytes" in line for line in done.stdout.splitlines())
    assert "rule gate: ok" in done.stdout.splitlines()  # then the rule x class matrix, with its own verdict
    assert done.stdout.rstrip().endswith("class gate: ok")
    done = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=300)
    out = json.loads(done.stdout)
    assert out["ok"] and out["gate"]["ok"]
    rows = {r["rule"]: r for r in out["gate"]["rules"]}
    assert rows["list"]["first"] == [0, 0] and rows["list"]["mutants"][0]["caught_at"] == [[0, 0]]
    assert rows["pkill"]["untestable"]
