"""Suite generation: from a state (and what the turn removed), the tests a correct server passes.

Each test checks one stated rule on one entity or field and starts from an empty store. Where the
texts allow several answers (200 or 201, 400 or 422) every allowed answer passes. The suite is
seeded by (scenario seed, turn), so it is the same on every run.
"""

from __future__ import annotations

import random
from typing import Any

from staminad.bench.schema import Analytics, Entity, Field, State
from staminad.suite.actions import action_tests
from staminad.suite.aggregates import analytics_tests
from staminad.suite.data import (
    other_value,
    scalar_body,
    stored,
    wrong_type_values,
)
from staminad.suite.history import History
from staminad.suite.model import OK, OK_OR_EMPTY, REJECTED, Absent, Check, Equals, ListIds, Suite, Test, req
from staminad.suite.plans import fixture_steps


def _equal_checks(obj: dict[str, Any]) -> tuple[Check, ...]:
    return tuple(Equals((k,), v) for k, v in obj.items())


def _create(entity: Entity, body: dict[str, Any], state: State, why: str = "") -> list[Any]:
    """POST a valid body and check the stored object comes back, then read it back."""
    expected = stored(state, entity, body)
    return [
        req("POST", f"/{entity.endpoint}", body, expect=OK, checks=_equal_checks(expected),
            why=why or f"a valid {entity.name} must be created"),
        req("GET", f"/{entity.endpoint}/{body['id']}", checks=_equal_checks(expected),
            why=f"the created {entity.name} must read back as stored"),
    ]


class _Builder:
    def __init__(self, state: State, rng: random.Random) -> None:
        self.state = state
        self.rng = rng
        self.tests: list[Test] = []
        self.names: set[str] = set()

    def add(self, name: str, category: str, rule: str, steps: list[Any]) -> None:
        base, n = name, 2
        while name in self.names:
            name, n = f"{base}_{n}", n + 1
        self.names.add(name)
        self.tests.append(Test(name=name, category=category, rule=rule, steps=tuple(steps)))  # type: ignore[arg-type]

    # --- per entity ---------------------------------------------------------------------------

    def entity(self, e: Entity) -> None:
        rng, st, ep = self.rng, self.state, e.endpoint
        full = scalar_body(rng, st, e, f"{ep}-1")
        fix, full = fixture_steps(rng, st, e, full)
        self.add(f"{ep}_create_and_read", "wrong_response_format", "create",
                 fix + _create(e, full, st, f"POST /{ep} with every field set must succeed"))
        minimal = scalar_body(rng, st, e, f"{ep}-min", full=False)
        self.add(f"{ep}_create_minimal", "default_value", "default",
                 _create(e, minimal, st, f"POST /{ep} with only the required fields must succeed"))
        a, b = scalar_body(rng, st, e, f"{ep}-a"), scalar_body(rng, st, e, f"{ep}-b")
        self.add(f"{ep}_list", "wrong_response_format", "list", [
            req("POST", f"/{ep}", a), req("POST", f"/{ep}", b),
            req("GET", f"/{ep}", checks=(ListIds((a["id"], b["id"])),), why=f"GET /{ep} must list both entities"),
        ])
        self.add(f"{ep}_read_unknown", "wrong_response_format", "read", [
            req("GET", f"/{ep}/no-such-id", expect=(404,), why="an unknown id must answer 404")])
        self.add(f"{ep}_delete", "wrong_response_format", "delete", [
            req("POST", f"/{ep}", a),
            req("DELETE", f"/{ep}/{a['id']}", expect=OK_OR_EMPTY, why="DELETE of an existing entity must succeed"),
            req("GET", f"/{ep}/{a['id']}", expect=(404,), why="a deleted entity must answer 404"),
            req("GET", f"/{ep}", checks=(ListIds(()),), why="a deleted entity must leave the list"),
            req("DELETE", f"/{ep}/{a['id']}", expect=(404,), why="deleting it again must answer 404"),
        ])
        self.add(f"{ep}_duplicate_id", "validation", "client-id", [
            req("POST", f"/{ep}", a),
            req("POST", f"/{ep}", {**b, "id": a["id"]}, expect=(400, 409, 422), why="a duplicate id must be rejected"),
        ])
        self.add(f"{ep}_missing_id", "validation", "client-id", [
            req("POST", f"/{ep}", {k: v for k, v in a.items() if k != "id"}, expect=REJECTED,
                why="a POST without id must be rejected")])
        self._update(e, a)

    def _update(self, e: Entity, a: dict[str, Any]) -> None:
        ep = e.endpoint
        scalars = [f for f in e.fields if f.kind not in ("ref", "ref_list")]
        if not scalars:
            return
        f = self.rng.choice(scalars)
        new = other_value(self.rng, self.state, f, a[f.name])
        if new is None:
            return
        after = {**stored(self.state, e, a), f.name: new}
        self.add(f"{ep}_update", "wrong_response_format", "update", [
            req("POST", f"/{ep}", a),
            req("PATCH", f"/{ep}/{a['id']}", {f.name: new}, checks=_equal_checks(after),
                why=f"PATCH of {f.name} must change only that field"),
            req("GET", f"/{ep}/{a['id']}", checks=_equal_checks(after), why="the update must be stored"),
        ])
        self.add(f"{ep}_patch_same_id", "validation", "patch-id", [
            req("POST", f"/{ep}", a),
            req("PATCH", f"/{ep}/{a['id']}", {"id": a["id"], f.name: new}, checks=(Equals((f.name,), new),),
                why="a PATCH holding the unchanged id must be accepted"),
        ])
        self.add(f"{ep}_patch_other_id", "validation", "patch-id", [
            req("POST", f"/{ep}", a),
            req("PATCH", f"/{ep}/{a['id']}", {"id": a["id"] + "-changed"}, expect=REJECTED,
                why="a PATCH changing the id must be rejected"),
            req("GET", f"/{ep}/{a['id']}", checks=(Equals(("id",), a["id"]),), why="the id must be unchanged"),
        ])
        self.add(f"{ep}_patch_unknown", "wrong_response_format", "update", [
            req("PATCH", f"/{ep}/no-such-id", {f.name: new}, expect=(404,), why="PATCH of an unknown id is 404")])

    # --- per field ----------------------------------------------------------------------------

    def field(self, e: Entity, f: Field) -> None:
        rng, st, ep, name = self.rng, self.state, e.endpoint, f"{e.endpoint}_{f.name}"
        base = scalar_body(rng, st, e, f"{ep}-f")
        fix: list[Any] = []
        if f.kind in ("ref", "ref_list"):
            fix, base = fixture_steps(rng, st, e, base, only=f.name)
        without = {k: v for k, v in base.items() if k != f.name}
        post = f"POST /{ep}"
        if f.required and not f.has_default:
            self.add(f"{name}_required", "validation", "required", [
                req("POST", f"/{ep}", without, expect=REJECTED, why=f"{post} without required {f.name} must fail")])
        elif f.has_default:
            self.add(f"{name}_default", "default_value", "default", [
                req("POST", f"/{ep}", without, checks=(Equals((f.name,), f.default),),
                    why=f"{post} without {f.name} must store its default {f.default!r}"),
                req("GET", f"/{ep}/{base['id']}", checks=(Equals((f.name,), f.default),), why="default is stored")])
        else:
            empty: list[str] | None = [] if f.kind == "ref_list" else None
            self.add(f"{name}_omitted", "default_value", "omitted", [
                req("POST", f"/{ep}", without, checks=(Equals((f.name,), empty),),
                    why=f"{post} without optional {f.name} must store {empty!r}")])
        if f.nullable:
            self.add(f"{name}_accepts_null", "validation", "null", [
                req("POST", f"/{ep}", {**without, f.name: None}, checks=(Equals((f.name,), None),),
                    why=f"nullable {f.name} must accept null")])
        else:
            rule = "reference-list" if f.kind == "ref_list" else "null"
            self.add(f"{name}_rejects_null", "validation", rule, [
                req("POST", f"/{ep}", {**without, f.name: None}, expect=REJECTED,
                    why=f"non-nullable {f.name} must reject null")])
        for i, bad in enumerate(wrong_type_values(f)):
            self.add(f"{name}_wrong_type_{i + 1}", "validation", "types", [
                req("POST", f"/{ep}", {**without, f.name: bad}, expect=REJECTED,
                    why=f"{f.kind} field {f.name} must reject {bad!r}")])
        if f.kind == "enum":
            self._enum(e, f, without)
        elif f.kind in ("integer", "float", "string", "datetime"):
            self._bounds(e, f, without)
        elif f.kind in ("ref", "ref_list"):
            self._references(e, f, fix, base, without)

    def _enum(self, e: Entity, f: Field, without: dict[str, Any]) -> None:
        ep, name = e.endpoint, f"{e.endpoint}_{f.name}"
        enum = self.state.enum(f.enum or "")
        assert enum is not None
        steps = [req("POST", f"/{ep}", {**without, "id": f"{ep}-v{i}", f.name: v}, checks=(Equals((f.name,), v),),
                     why=f"enum value {v!r} must be accepted") for i, v in enumerate(enum.values)]
        self.add(f"{name}_enum_values", "enum_handling", "enum", steps)
        self.add(f"{name}_enum_unknown", "enum_handling", "enum", [
            req("POST", f"/{ep}", {**without, f.name: "not_a_listed_value"}, expect=REJECTED,
                why=f"{f.name} must reject a value outside {enum.name}")])
        cased = next((v.upper() for v in enum.values if v.upper() not in enum.values), None)
        if cased:
            self.add(f"{name}_enum_case", "enum_handling", "enum", [
                req("POST", f"/{ep}", {**without, f.name: cased}, expect=REJECTED,
                    why=f"enum values are case-sensitive: {cased!r} must be rejected")])

    def _bounds(self, e: Entity, f: Field, without: dict[str, Any]) -> None:
        ep, name = e.endpoint, f"{e.endpoint}_{f.name}"
        rule = {"integer": "range", "float": "range", "string": "length", "datetime": "datetime"}[f.kind]
        edges: list[tuple[str, Any, bool]] = []  # (label, value, accepted)
        if f.kind in ("integer", "float"):
            step = 1 if f.kind == "integer" else 0.01
            if f.minimum is not None:
                edges += [("at_min", f.minimum, True), ("below_min", f.minimum - step, False)]
            if f.maximum is not None:
                edges += [("at_max", f.maximum, True), ("above_max", f.maximum + step, False)]
        elif f.kind == "string":
            if f.min_length:
                edges += [("at_min_length", "m" * f.min_length, True), ("below_min_length", "m" * (f.min_length - 1),
                                                                          False)]
            if f.max_length is not None:
                edges += [("at_max_length", "x" * f.max_length, True),
                          ("above_max_length", "x" * (f.max_length + 1), False)]
        else:
            edges += [("bad_format", "2024-03-15T10:00:00", False), ("bad_calendar", _bad_date(f), False),
                      ("bad_hour", _bad_date(f, hour=True), False)]
            if f.after is not None:
                edges += [("at_after", f.after, True), ("before_after", _shift(f.after, -1), False)]
            if f.before is not None:
                edges += [("at_before", f.before, True), ("after_before", _shift(f.before, 1), False)]
        for label, value, accepted in edges:
            if f.kind == "float" and isinstance(value, float):
                value = round(value, 2)
            step_ = req("POST", f"/{ep}", {**without, f.name: value},
                        expect=OK if accepted else REJECTED, checks=(Equals((f.name,), value),) if accepted else (),
                        why=f"{f.name}={value!r} must be {'accepted' if accepted else 'rejected'} (bounds inclusive)")
            self.add(f"{name}_{label}", "validation", rule, [step_])

    def _references(self, e: Entity, f: Field, fix: list[Any], base: dict[str, Any],
                    without: dict[str, Any]) -> None:
        ep, name = e.endpoint, f"{e.endpoint}_{f.name}"
        target = self.state.entity(f.target or "")
        assert target is not None
        many = f.kind == "ref_list"
        rule = "reference-list" if many else "reference"
        bad = ["no-such-id"] if many else "no-such-id"
        self.add(f"{name}_unknown_reference", "validation", rule, [
            req("POST", f"/{ep}", {**without, f.name: bad}, expect=REJECTED,
                why=f"{f.name} must reject an id that does not exist")])
        value = base[f.name]
        self.add(f"{name}_reference_reads_back", "wrong_response_format", rule, [
            *fix, req("POST", f"/{ep}", base, checks=(Equals((f.name,), value),),
                      why=f"{f.name} must hold the referenced id{'s' if many else ''}"),
            req("GET", f"/{ep}/{base['id']}", checks=(Equals((f.name,), value),), why="references read back as ids")])
        victim = value[0] if many else value
        left = [v for v in value if v != victim] if many else None
        self.add(f"{name}_cascade", "cascade_deletion", "cascade", [
            *fix, req("POST", f"/{ep}", base),
            req("DELETE", f"/{target.endpoint}/{victim}", expect=OK_OR_EMPTY, why="delete the referenced entity"),
            req("GET", f"/{ep}/{base['id']}", checks=(Equals((f.name,), left),),
                why=f"deleting {victim} must {'remove it from' if many else 'null'} {f.name}")])

    # --- analytics, reset, history ------------------------------------------------------------

    def analytics(self, a: Analytics) -> None:
        for name, category, rule, steps in analytics_tests(self.state, a, self.rng):
            self.add(name, category, rule, steps)

    def reset(self) -> None:
        steps: list[Any] = []
        for e in self.state.entities[:3]:
            steps.append(req("POST", f"/{e.endpoint}", scalar_body(self.rng, self.state, e, f"{e.endpoint}-r")))
        steps.append(req("POST", "/reset", expect=OK_OR_EMPTY, why="POST /reset must succeed"))
        steps += [req("GET", f"/{e.endpoint}", checks=(ListIds(()),), why="reset must empty every collection")
                  for e in self.state.entities[:3]]
        self.add("reset_clears_everything", "missing_feature", "reset", steps)

    def history(self, h: History) -> None:
        for old in h.retired_endpoints:
            self.add(f"gone_endpoint_{old}", "regression", "unknown-path", [
                req("GET", f"/{old}", expect=(404,), why=f"/{old} no longer exists and must answer 404"),
                req("GET", f"/{old}/some-id", expect=(404,), why=f"/{old}/{{id}} must answer 404")])
        for entity, field, why in h.removed_fields:
            e = self.state.entity(entity)
            assert e is not None
            body = scalar_body(self.rng, self.state, e, f"{e.endpoint}-gone")
            category = "rename" if why == "renamed" else "missing_feature"
            rule = "rename-field" if why == "renamed" else "delete-field"
            self.add(f"{e.endpoint}_{field}_gone", category, rule, [
                req("POST", f"/{e.endpoint}", body, checks=(Absent(field),),
                    why=f"the {why} field {field} must no longer be returned"),
                req("GET", f"/{e.endpoint}/{body['id']}", checks=(Absent(field),), why=f"{field} is gone")])
        for path in h.removed_analytics:
            self.add(f"gone_analytics{path.replace('/', '_')}", "missing_feature", "unknown-path", [
                req("GET", path, expect=(404,), why=f"the removed analytics endpoint {path} must answer 404")])
        for entity, action in h.removed_actions:
            e = self.state.entity(entity)
            assert e is not None
            body = scalar_body(self.rng, self.state, e, f"{e.endpoint}-gone")
            self.add(f"{e.endpoint}_{action}_gone", "missing_feature", "unknown-path", [
                req("POST", f"/{e.endpoint}", body),
                req("POST", f"/{e.endpoint}/{body['id']}/{action}", expect=(404, 405), action=True,
                    why=f"the removed action {action} must answer 404")])
        for entity, field in h.renamed_targets:
            e = self.state.entity(entity)
            f = e.field(field) if e else None
            assert e is not None and f is not None
            fix, body = fixture_steps(self.rng, self.state, e, scalar_body(self.rng, self.state, e, f"{e.endpoint}-k"),
                                      only=field)
            self.add(f"{e.endpoint}_{field}_keeps_name", "rename", "rename-entity", [
                *fix, req("POST", f"/{e.endpoint}", body, checks=(Equals((field,), body[field]),),
                          why=f"{field} keeps its name after its target entity was renamed")])


def _bad_date(f: Field, hour: bool = False) -> str:
    year = int((f.after or "2023")[:4]) + 1 if f.after else 2023
    if f.before and year > int(f.before[:4]):
        year = int(f.before[:4])
    return f"{year}-04-10 24:00:00" if hour else f"{year}-02-30 10:00:00"


def _shift(stamp: str, seconds: int) -> str:
    import datetime as dt

    t = dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S") + dt.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%d %H:%M:%S")


def generate_suite(state: State, seed: int, turn: int, history: History | None = None) -> Suite:
    """T's test list for one turn; deterministic in (state, seed, turn, history)."""
    b = _Builder(state, random.Random(f"suite/{seed}/{turn}"))
    b.reset()
    for e in state.entities:
        b.entity(e)
        for f in e.fields:
            b.field(e, f)
    for a in state.analytics:
        b.analytics(a)
    for action in state.actions:
        for name, category, rule, steps in action_tests(state, action, b.rng):
            b.add(name, category, rule, steps)
    if history is not None:
        b.history(history)
    return Suite(seed=seed, turn=turn, tests=tuple(b.tests))

