"""After a field rename, the suite of that turn checks the old key is ignored, and catches a server aliasing it."""

from __future__ import annotations

import json

import msgspec
import pytest

from staminad.bench.scenario import ScenarioParams, generate
from staminad.reference.server import App
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.inprocess import AppTransport
from staminad.suite.runner import run_suite_blocking

SEEDS = range(4)
TURNS = 20


class _Aliasing(AppTransport):
    """The reference, except that a request's old key of a renamed field is written to the field's new name."""

    def __init__(self, app: App, moves: dict[str, str]) -> None:
        super().__init__(app)
        self.moves = moves

    def request(
        self, method: str, path: str, body: bytes | None, content_type: str | None = "application/json"
    ) -> tuple[int, bytes]:
        if body and method in ("POST", "PATCH") and content_type is not None:
            try:
                doc = json.loads(body)
            except ValueError:  # a raw step's malformed body goes through as it is
                doc = None
            if isinstance(doc, dict):
                body = json.dumps({self.moves.get(k, k): v for k, v in doc.items()}).encode()
        return super().request(method, path, body, content_type)


@pytest.mark.slow  # ~4-5 s of CPU on a busy 2-core box: over the fast tier's budget
def test_an_old_key_written_to_the_renamed_field_fails_at_the_turn_of_the_rename() -> None:
    """Every turn that renames a scalar field tests its old key, and a server treating it as an alias fails there."""
    tested = 0
    for seed in SEEDS:
        scenario = generate(seed, ScenarioParams(turns=TURNS))
        for turn in range(1, TURNS + 1):
            state, history = state_and_history(scenario, turn)
            assert history is not None
            moves = {
                old: new
                for entity, old, new in history.renamed_fields
                if (f := state.entity(entity).field(new)) is not None  # type: ignore[union-attr]
                and f.kind not in ("ref", "ref_list")
            }
            if not moves:
                continue
            suite = generate_suite(state, seed, turn, history)
            named = {t.name for t in suite.tests if t.name.endswith("_old_key_ignored")}
            assert len(named) >= 1, (seed, turn)
            config = {"schema": msgspec.to_builtins(state)}
            assert run_suite_blocking(suite, AppTransport(App(config))).passed
            failed = run_suite_blocking(suite, _Aliasing(App(config), moves)).failures
            assert {f.name for f in failed} & named, (seed, turn)
            assert all(f.rule == "rename-field" for f in failed if f.name in named)
            tested += 1
    assert tested
