"""A failing test cites the README rule its failing check pins, not only the rule of the test it sits in."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from staminad.bench.scenario import ScenarioParams, generate
from staminad.reference.mutants import MUTANT_BY_BUG
from staminad.reference.server import App
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.inprocess import AppTransport
from staminad.suite.runner import run_suite_blocking

SEEDS = range(6)
TURNS = 20


class _ListsAsNull(AppTransport):
    """The reference, except that every empty list inside an entity is answered as null (`None` for "no items")."""

    def request(
        self, method: str, path: str, body: bytes | None, content_type: str | None = "application/json"
    ) -> tuple[int, bytes]:
        status, raw = super().request(method, path, body, content_type)
        doc = json.loads(raw)

        def strip(obj: Any) -> Any:
            return {k: (None if v == [] else v) for k, v in obj.items()} if isinstance(obj, dict) else obj

        doc = [strip(o) for o in doc] if isinstance(doc, list) else strip(doc)
        return status, json.dumps(doc).encode()


def _turns() -> list[tuple[int, int, Any, Any]]:
    out = []
    for seed in SEEDS:
        scenario = generate(seed, ScenarioParams(turns=TURNS))
        for turn in (0, TURNS // 2, TURNS):
            state, history = state_and_history(scenario, turn)
            out.append((seed, turn, state, history))
    return out


def test_a_list_answered_as_null_is_reported_under_reference_list() -> None:
    """A list answered as null fails under `reference-list` (or `omitted`), never another test's rule."""
    seen = 0
    for seed, turn, state, history in _turns():
        if not any(f.kind == "ref_list" for e in state.entities for f in e.fields):
            continue
        suite = generate_suite(state, seed, turn, history)
        result = run_suite_blocking(suite, _ListsAsNull(App({"schema": msgspec.to_builtins(state)})))
        rules = {f.rule for f in result.failures if "null, expected []" in f.message}
        seen += bool(rules)
        assert rules <= {"reference-list", "omitted"}, (seed, turn, rules)
    assert seen


def test_clamped_effects_are_reported_under_effects() -> None:
    """Effects clamped to a field's bounds fail under `effects`, the rule that says results are stored past bounds."""
    seen = 0
    for seed, turn, state, history in _turns():
        if not MUTANT_BY_BUG["effects-clamped"].exercised(state, ()):
            continue
        suite = generate_suite(state, seed, turn, history)
        config = {"schema": msgspec.to_builtins(state), "bugs": ["effects-clamped"]}
        failures = run_suite_blocking(suite, AppTransport(App(config))).failures
        seen += bool(failures)
        assert {f.rule for f in failures} <= {"effects"}, (seed, turn, [(f.name, f.rule) for f in failures])
    assert seen
