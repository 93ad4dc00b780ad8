"""Suite generation: from a state (and what the turn removed), the tests a correct server passes.

Each test checks one stated rule on one entity or field and starts from an empty store. Where the
texts allow several answers (200 or 201, 400 or 422) every allowed answer passes. The suite is
seeded by (scenario seed, turn, attempt), so it is the same on every run; each attempt of a turn runs
the same tests on data of its own (`draws`), so answers replayed from an earlier attempt fail.
"""

from __future__ import annotations

import math
import random
from typing import Any

from staminad.bench.schema import Analytics, Entity, Field, State
from staminad.suite import rawbody
from staminad.suite.actions import action_tests
from staminad.suite.aggregates import analytics_tests
from staminad.suite.classes import EDGE_CLASSES, WRONG_TYPE_CLASSES, Ctx, class_tests, entity_class_tests
from staminad.suite.data import (
    constrained,
    datetime_probe,
    invalid_value,
    object_value,
    other_value,
    scalar_body,
    stored,
    stored_checks,
    wide_string,
    wrong_type_values,
)
from staminad.suite.draws import SuiteRandom, ident, pick
from staminad.suite.history import History
from staminad.suite.model import OK, OK_OR_EMPTY, REJECTED, Absent, Equals, ListIds, Suite, Test, req
from staminad.suite.plans import fixture_steps
from staminad.suite.removals import removed_effect_test, removed_guard_test

_equal_checks = stored_checks


def _create(entity: Entity, body: dict[str, Any], state: State, why: str = "") -> list[Any]:
    """POST a valid body and check the stored object comes back, then read it back."""
    expected = stored(state, entity, body)
    return [
        req(
            "POST",
            f"/{entity.endpoint}",
            body,
            expect=OK,
            checks=_equal_checks(expected),
            why=why or f"a valid {entity.name} must be created",
        ),
        req(
            "GET",
            f"/{entity.endpoint}/{body['id']}",
            checks=_equal_checks(expected),
            why=f"the created {entity.name} must read back as stored",
        ),
    ]


class _Builder:
    def __init__(self, state: State, rng: SuiteRandom) -> None:
        self.state = state
        self.rng = rng
        # The input-class tests draw from a stream of their own, split off this one without drawing from it,
        # so the data of every other test stays as it was before they existed.
        split = random.Random()
        split.setstate(rng.getstate())
        self.class_rng = SuiteRandom(0, 0)
        self.class_rng.attempt = rng.attempt
        self.class_rng.seed(f"classes/{split.getrandbits(64)}")
        self.tests: list[Test] = []
        self.names: set[str] = set()

    def add(self, name: str, category: str, rule: str, steps: list[Any], classes: tuple[str, ...] = ()) -> None:
        base, n = name, 2
        while name in self.names:
            name, n = f"{base}_{n}", n + 1
        self.names.add(name)
        self.tests.append(
            Test(name=name, category=category, rule=rule, steps=tuple(steps), classes=classes)  # type: ignore[arg-type]
        )

    # --- per entity ---------------------------------------------------------------------------

    def entity(self, e: Entity) -> None:
        rng, st, ep = self.rng, self.state, e.endpoint
        full = scalar_body(rng, st, e, ident(rng, f"{ep}-1"))
        fix, full = fixture_steps(rng, st, e, full)
        self.add(
            f"{ep}_create_and_read",
            "wrong_response_format",
            "create",
            fix + _create(e, full, st, f"POST /{ep} with every field set must succeed"),
        )
        minimal = scalar_body(rng, st, e, ident(rng, f"{ep}-min"), full=False)
        self.add(
            f"{ep}_create_minimal",
            "default_value",
            "default",
            _create(e, minimal, st, f"POST /{ep} with only the required fields must succeed"),
        )
        a, b = scalar_body(rng, st, e, ident(rng, f"{ep}-a")), scalar_body(rng, st, e, ident(rng, f"{ep}-b"))
        self.add(
            f"{ep}_list",
            "wrong_response_format",
            "list",
            [
                req("POST", f"/{ep}", a),
                req("POST", f"/{ep}", b),
                req("GET", f"/{ep}", checks=(ListIds((a["id"], b["id"])),), why=f"GET /{ep} must list both entities"),
            ],
        )
        self.add(
            f"{ep}_read_unknown",
            "wrong_response_format",
            "read",
            [req("GET", f"/{ep}/{ident(rng, 'no-such-id')}", expect=(404,), why="an unknown id must answer 404")],
        )
        self.add(
            f"{ep}_delete",
            "wrong_response_format",
            "delete",
            [
                req("POST", f"/{ep}", a),
                req("DELETE", f"/{ep}/{a['id']}", expect=OK_OR_EMPTY, why="DELETE of an existing entity must succeed"),
                req("GET", f"/{ep}/{a['id']}", expect=(404,), why="a deleted entity must answer 404"),
                req("GET", f"/{ep}", checks=(ListIds(()),), why="a deleted entity must leave the list"),
                req("DELETE", f"/{ep}/{a['id']}", expect=(404,), why="deleting it again must answer 404"),
            ],
        )
        self.add(
            f"{ep}_duplicate_id",
            "validation",
            "client-id",
            [
                req("POST", f"/{ep}", a),
                req(
                    "POST",
                    f"/{ep}",
                    {**b, "id": a["id"]},
                    expect=(400, 409, 422),
                    why="a duplicate id must be rejected",
                ),
            ],
            ("duplicate",),
        )
        self.add(
            f"{ep}_missing_id",
            "validation",
            "client-id",
            [
                req(
                    "POST",
                    f"/{ep}",
                    {k: v for k, v in a.items() if k != "id"},
                    expect=REJECTED,
                    why="a POST without id must be rejected",
                ),
                req("GET", f"/{ep}", checks=(ListIds(()),), why="a rejected POST must store nothing"),
            ],
        )
        self.add(
            f"{ep}_numeric_id",
            "validation",
            "client-id",
            [req("POST", f"/{ep}", {**a, "id": 12345}, expect=REJECTED, why="a number is not a string id")],
            ("number",),
        )
        odd = ident(rng, f"Id-0_{ep}.x~")
        self.add(
            f"{ep}_id_characters",
            "wrong_response_format",
            "client-id",
            [
                req(
                    "POST",
                    f"/{ep}",
                    {**a, "id": odd},
                    checks=(Equals(("id",), odd),),
                    why="ids may hold letters, digits, '-', '_', '.' and '~'",
                ),
                req("GET", f"/{ep}/{odd}", checks=(Equals(("id",), odd),), why=f"GET /{ep}/{odd} must read it back"),
            ],
            ("every_allowed_character",),
        )
        self.add(
            f"{ep}_bad_ids",
            "validation",
            "client-id",
            [
                req("POST", f"/{ep}", {**a, "id": bad}, expect=REJECTED, why=f"the id {bad!r} must be rejected")
                for bad in ("", "a b", f"{ep}/1")
            ],
            ("empty", "other_characters"),
        )
        stray = next(k for k in ("note_not_in_design", "stray_key_x", "stray_key_y") if e.field(k) is None)
        self.add(
            f"{ep}_ignores_unknown_key",
            "wrong_response_format",
            "unknown-keys",
            [
                req(
                    "POST",
                    f"/{ep}",
                    {**a, stray: "ignored"},
                    expect=OK,
                    checks=(Absent(stray),),
                    why=f"{stray} is not a field of {e.name}: it must be ignored",
                ),
                req("GET", f"/{ep}/{a['id']}", checks=(Absent(stray),), why=f"{stray} must not be stored"),
            ],
        )
        self.add(
            f"{ep}_patch_unknown",
            "wrong_response_format",
            "update",
            [
                req(
                    "PATCH", f"/{ep}/{ident(rng, 'no-such-id')}", {}, expect=(404,), why="PATCH of an unknown id is 404"
                ),
                req("GET", f"/{ep}", checks=(ListIds(()),), why="a PATCH of an unknown id must create nothing"),
            ],
        )
        self._update(e, a)
        self._patch_rejections(e, a)
        for name, category, rule, classes, steps in entity_class_tests(st, self.class_rng, e):
            self.add(name, category, rule, steps, classes)

    def _patch_rejections(self, e: Entity, a: dict[str, Any]) -> None:
        """A PATCH is validated like a POST, and a rejected one changes nothing (even its valid keys)."""
        ep, rng = e.endpoint, self.rng
        if not e.fields:
            return
        picked = [f for f in e.fields if constrained(f)] or list(e.fields)
        f = pick(rng, f"{ep}_patch_invalid", picked, _name)
        before = stored(self.state, e, a)
        self.add(
            f"{ep}_patch_invalid",
            "validation",
            "update",
            [
                req("POST", f"/{ep}", a),
                req(
                    "PATCH",
                    f"/{ep}/{a['id']}",
                    {f.name: invalid_value(f)},
                    expect=REJECTED,
                    why=f"PATCH must validate {f.name} as POST does",
                ),
                req("GET", f"/{ep}/{a['id']}", checks=_equal_checks(before), why="a rejected PATCH changes nothing"),
            ],
        )
        strict = [x for x in e.fields if not x.nullable]
        if strict:
            nn = pick(rng, f"{ep}_patch_null", strict, _name)
            self.add(
                f"{ep}_patch_null",
                "validation",
                "update",
                [
                    req("POST", f"/{ep}", a),
                    req(
                        "PATCH",
                        f"/{ep}/{a['id']}",
                        {nn.name: None},
                        expect=REJECTED,
                        why=f"{nn.name} is not nullable, in a PATCH as in a POST",
                    ),
                    req(
                        "GET", f"/{ep}/{a['id']}", checks=_equal_checks(before), why="a rejected PATCH changes nothing"
                    ),
                ],
            )
        changeable = [
            (g, v)
            for g in e.fields
            if g.kind not in ("ref", "ref_list")
            for v in [other_value(rng, self.state, g, a[g.name])]
            if v is not None
        ]
        if not changeable or len(e.fields) < 2:
            return
        g, new = pick(rng, f"{ep}_patch_atomic", changeable, lambda c: c[0].name)
        bad = pick(rng, f"{ep}_patch_atomic/invalid", [x for x in e.fields if x.name != g.name], _name)
        self.add(
            f"{ep}_patch_atomic",
            "validation",
            "update",
            [
                req("POST", f"/{ep}", a),
                req(
                    "PATCH",
                    f"/{ep}/{a['id']}",
                    {g.name: new, bad.name: invalid_value(bad)},
                    expect=REJECTED,
                    why=f"{bad.name} is invalid, so the whole PATCH must be rejected",
                ),
                req(
                    "GET",
                    f"/{ep}/{a['id']}",
                    checks=_equal_checks(before),
                    why=f"a rejected PATCH changes nothing, not even the valid {g.name}",
                ),
            ],
        )

    def _update(self, e: Entity, a: dict[str, Any]) -> None:
        ep = e.endpoint
        self.add(
            f"{ep}_patch_other_id",
            "validation",
            "patch-id",
            [
                req("POST", f"/{ep}", a),
                req(
                    "PATCH",
                    f"/{ep}/{a['id']}",
                    {"id": a["id"] + "-changed"},
                    expect=REJECTED,
                    why="a PATCH changing the id must be rejected",
                ),
                req("GET", f"/{ep}/{a['id']}", checks=(Equals(("id",), a["id"]),), why="the id must be unchanged"),
                req("GET", f"/{ep}", checks=(ListIds((a["id"],)),), why="the entity must keep its id"),
            ],
        )
        scalars = [f for f in e.fields if f.kind not in ("ref", "ref_list")]
        if not scalars:
            return
        f = pick(self.rng, f"{ep}_update", scalars, _name)
        new = other_value(self.rng, self.state, f, a[f.name])
        if new is None:
            return
        after = {**stored(self.state, e, a), f.name: new}
        self.add(
            f"{ep}_update",
            "wrong_response_format",
            "update",
            [
                req("POST", f"/{ep}", a),
                req(
                    "PATCH",
                    f"/{ep}/{a['id']}",
                    {f.name: new},
                    checks=_equal_checks(after),
                    why=f"PATCH of {f.name} must change only that field",
                ),
                req("GET", f"/{ep}/{a['id']}", checks=_equal_checks(after), why="the update must be stored"),
            ],
        )
        self.add(
            f"{ep}_patch_same_id",
            "validation",
            "patch-id",
            [
                req("POST", f"/{ep}", a),
                req(
                    "PATCH",
                    f"/{ep}/{a['id']}",
                    {"id": a["id"], f.name: new},
                    checks=(Equals((f.name,), new),),
                    why="a PATCH holding the unchanged id must be accepted",
                ),
            ],
        )

    # --- per field ----------------------------------------------------------------------------

    def field(self, e: Entity, f: Field) -> None:
        rng, st, ep, name = self.rng, self.state, e.endpoint, f"{e.endpoint}_{f.name}"
        base = scalar_body(rng, st, e, ident(rng, f"{ep}-f"))
        fix: list[Any] = []
        if f.kind in ("ref", "ref_list"):
            fix, base = fixture_steps(rng, st, e, base, only=f.name)
        without = {k: v for k, v in base.items() if k != f.name}
        post = f"POST /{ep}"
        if f.required and not f.has_default:
            self.add(
                f"{name}_required",
                "validation",
                "required",
                [req("POST", f"/{ep}", without, expect=REJECTED, why=f"{post} without required {f.name} must fail")],
            )
        elif f.has_default:
            self.add(
                f"{name}_default",
                "default_value",
                "default",
                [
                    req(
                        "POST",
                        f"/{ep}",
                        without,
                        checks=(Equals((f.name,), f.default),),
                        why=f"{post} without {f.name} must store its default {f.default!r}",
                    ),
                    req("GET", f"/{ep}/{base['id']}", checks=(Equals((f.name,), f.default),), why="default is stored"),
                ],
            )
        else:
            empty: list[str] | None = [] if f.kind == "ref_list" else None
            self.add(
                f"{name}_omitted",
                "default_value",
                "omitted",
                [
                    req(
                        "POST",
                        f"/{ep}",
                        without,
                        checks=(Equals((f.name,), empty),),
                        why=f"{post} without optional {f.name} must store {empty!r}",
                    )
                ],
            )
        if f.nullable:
            self.add(
                f"{name}_accepts_null",
                "validation",
                "null",
                [
                    req(
                        "POST",
                        f"/{ep}",
                        {**without, f.name: None},
                        checks=(Equals((f.name,), None),),
                        why=f"nullable {f.name} must accept null",
                    )
                ],
            )
        else:
            rule = "reference-list" if f.kind == "ref_list" else "null"
            self.add(
                f"{name}_rejects_null",
                "validation",
                rule,
                [
                    req(
                        "POST",
                        f"/{ep}",
                        {**without, f.name: None},
                        expect=REJECTED,
                        why=f"non-nullable {f.name} must reject null",
                    )
                ],
            )
        for i, bad in enumerate(wrong_type_values(f)):
            steps = [
                req(
                    "POST",
                    f"/{ep}",
                    {**without, f.name: bad},
                    expect=REJECTED,
                    why=f"{f.kind} field {f.name} must reject {bad!r}",
                )
            ]
            if i == 0:  # a JSON object where a scalar or id belongs: the value a lookup or comparison crashes on
                steps.append(
                    req(
                        "POST",
                        f"/{ep}",
                        {**without, f.name: object_value(f, base)},
                        expect=REJECTED,
                        why=f"{f.kind} field {f.name} must reject an object",
                    )
                )
            kinds = WRONG_TYPE_CLASSES[f.kind][i : i + 1] + (("object_for_value",) if i == 0 else ())
            self.add(f"{name}_wrong_type_{i + 1}", "validation", "types", steps, kinds)
        falsy = _falsy(f)
        if falsy is not _NONE:
            rule = "default" if f.has_default else "required" if f.required else "types"
            self.add(
                f"{name}_falsy_value",
                "validation",
                rule,
                [
                    req(
                        "POST",
                        f"/{ep}",
                        {**without, f.name: falsy},
                        checks=(Equals((f.name,), falsy),),
                        why=f"{falsy!r} is a value like any other: {f.name} must store it",
                    ),
                    req("GET", f"/{ep}/{base['id']}", checks=(Equals((f.name,), falsy),), why=f"{falsy!r} is stored"),
                ],
            )
        if f.kind == "float":
            whole = _whole_number(f)
            self.add(
                f"{name}_integral_float",
                "validation",
                "types",
                [
                    req(
                        "POST",
                        f"/{ep}",
                        {**without, f.name: whole},
                        checks=(Equals((f.name,), whole),),
                        why=f"a float is any JSON number: {f.name}={whole} must be accepted",
                    )
                ],
                ("integer_for_float",),
            )
        if f.kind == "enum":
            self._enum(e, f, without)
        elif f.kind in ("integer", "float", "string", "datetime"):
            self._bounds(e, f, without)
        elif f.kind in ("ref", "ref_list"):
            self._references(e, f, fix, base, without)
        for tname, category, rule, classes, steps in class_tests(Ctx(st, self.class_rng, e, f, without, base, fix)):
            self.add(tname, category, rule, steps, classes)

    def _enum(self, e: Entity, f: Field, without: dict[str, Any]) -> None:
        ep, name = e.endpoint, f"{e.endpoint}_{f.name}"
        enum = self.state.enum(f.enum or "")
        assert enum is not None
        steps = [
            req(
                "POST",
                f"/{ep}",
                {**without, "id": ident(self.rng, f"{ep}-v{i}"), f.name: v},
                checks=(Equals((f.name,), v),),
                why=f"enum value {v!r} must be accepted",
            )
            for i, v in enumerate(enum.values)
        ]
        self.add(f"{name}_enum_values", "enum_handling", "enum", steps, ("every_value",))
        self.add(
            f"{name}_enum_unknown",
            "enum_handling",
            "enum",
            [
                req(
                    "POST",
                    f"/{ep}",
                    {**without, f.name: "not_a_listed_value"},
                    expect=REJECTED,
                    why=f"{f.name} must reject a value outside {enum.name}",
                )
            ],
            ("unknown",),
        )
        cased = next((v.upper() for v in enum.values if v.upper() not in enum.values), None)
        if cased:
            self.add(
                f"{name}_enum_case",
                "enum_handling",
                "enum",
                [
                    req(
                        "POST",
                        f"/{ep}",
                        {**without, f.name: cased},
                        expect=REJECTED,
                        why=f"enum values are case-sensitive: {cased!r} must be rejected",
                    )
                ],
                ("case_only",),
            )

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
            # Non-ASCII at the edges: bounds count characters, and these take two bytes each.
            if f.min_length:
                edges += [
                    ("at_min_length", "m" * f.min_length, True),
                    ("below_min_length", wide_string(f.min_length - 1), False),
                ]
            if f.max_length is not None:
                edges += [
                    ("at_max_length", wide_string(f.max_length), True),
                    ("above_max_length", "x" * (f.max_length + 1), False),
                ]
        else:
            # Each malformed value lies inside the bounds where one can, so only its form rejects it.
            edges += [
                ("bad_format", datetime_probe(f, "iso") or "2024-03-15T10:00:00", False),
                ("bad_calendar", _bad_date(f), False),
                ("bad_hour", datetime_probe(f, "hour") or _bad_date(f, hour=True), False),
                ("bad_leap_day", datetime_probe(f, "leap") or "2023-02-29 10:00:00", False),
                ("bad_no_seconds", datetime_probe(f, "short") or "2024-03-15 10:00", False),
            ]
            if f.after is not None:
                edges += [("at_after", f.after, True), ("before_after", _shift(f.after, -1), False)]
            if f.before is not None:
                edges += [("at_before", f.before, True), ("after_before", _shift(f.before, 1), False)]
        for label, value, accepted in edges:
            if f.kind == "float" and isinstance(value, float):
                value = round(value, 2)
            step_ = req(
                "POST",
                f"/{ep}",
                {**without, f.name: value},
                expect=OK if accepted else REJECTED,
                checks=(Equals((f.name,), value),) if accepted else (),
                why=f"{f.name}={value!r} must be {'accepted' if accepted else 'rejected'} (bounds inclusive)",
            )
            self.add(f"{name}_{label}", "validation", rule, [step_], (EDGE_CLASSES[label],))

    def _references(self, e: Entity, f: Field, fix: list[Any], base: dict[str, Any], without: dict[str, Any]) -> None:
        ep, name = e.endpoint, f"{e.endpoint}_{f.name}"
        target = self.state.entity(f.target or "")
        assert target is not None
        many = f.kind == "ref_list"
        rule = "reference-list" if many else "reference"
        unknown = ident(self.rng, "no-such-id")
        bad = [unknown] if many else unknown
        self.add(
            f"{name}_unknown_reference",
            "validation",
            rule,
            [
                req(
                    "POST",
                    f"/{ep}",
                    {**without, f.name: bad},
                    expect=REJECTED,
                    why=f"{f.name} must reject an id that does not exist",
                )
            ],
            ("unknown_id",),
        )
        value = base[f.name]
        other = next((x for x in self.state.entities if x.name != target.name), None)
        if other is not None:
            ob = scalar_body(self.rng, self.state, other, ident(self.rng, f"{other.endpoint}-x9"))
            self.add(
                f"{name}_reference_other_type",
                "validation",
                rule,
                [
                    req("POST", f"/{other.endpoint}", ob, why=f"create a {other.name}, which is not a {target.name}"),
                    req(
                        "POST",
                        f"/{ep}",
                        {**without, f.name: [ob["id"]] if many else ob["id"]},
                        expect=REJECTED,
                        why=f"{f.name} must reject the id of a {other.name}: it references {target.name}",
                    ),
                ],
                ("other_type",),
            )
        self.add(
            f"{name}_reference_reads_back",
            "wrong_response_format",
            rule,
            [
                *fix,
                req(
                    "POST",
                    f"/{ep}",
                    base,
                    checks=(Equals((f.name,), value),),
                    why=f"{f.name} must hold the referenced id{'s' if many else ''}",
                ),
                req(
                    "GET", f"/{ep}/{base['id']}", checks=(Equals((f.name,), value),), why="references read back as ids"
                ),
            ],
            ("id_read_back",),
        )
        victim = value[0] if many else value
        left = [v for v in value if v != victim] if many else None
        second = {**base, "id": f"{base['id']}-2"}  # two referrers: every one of them must be updated
        self.add(
            f"{name}_cascade",
            "cascade_deletion",
            "cascade",
            [
                *fix,
                req("POST", f"/{ep}", base),
                req("POST", f"/{ep}", second),
                req("DELETE", f"/{target.endpoint}/{victim}", expect=OK_OR_EMPTY, why="delete the referenced entity"),
                req(
                    "GET",
                    f"/{ep}",
                    checks=(ListIds(tuple(_ids_left(fix, ep, (base["id"], second["id"]), victim))),),
                    why=f"deleting {victim} must not delete the {e.name} entities that referred to it",
                ),
                *(
                    req(
                        "GET",
                        f"/{ep}/{b['id']}",
                        checks=(Equals((f.name,), left),),
                        why=f"deleting {victim} must {'remove it from' if many else 'null'} {f.name} of {b['id']}",
                    )
                    for b in (base, second)
                ),
            ],
        )

    # --- analytics, reset, history ------------------------------------------------------------

    def analytics(self, a: Analytics) -> None:
        for name, category, rule, steps, classes in analytics_tests(self.state, a, self.rng, self.class_rng):
            self.add(name, category, rule, steps, classes)

    def reset(self) -> None:
        steps: list[Any] = []
        for e in self.state.entities[:3]:
            body = scalar_body(self.rng, self.state, e, ident(self.rng, f"{e.endpoint}-r"))
            steps.append(req("POST", f"/{e.endpoint}", body))
        steps.append(req("POST", "/reset", expect=OK_OR_EMPTY, why="POST /reset must succeed"))
        steps += [
            req("GET", f"/{e.endpoint}", checks=(ListIds(()),), why="reset must empty every collection")
            for e in self.state.entities[:3]
        ]
        self.add("reset_clears_everything", "missing_feature", "reset", steps)

    def history(self, h: History) -> None:
        for old in h.retired_endpoints:
            self.add(
                f"gone_endpoint_{old}",
                "regression",
                "unknown-path",
                [
                    req("GET", f"/{old}", expect=(404,), why=f"/{old} no longer exists and must answer 404"),
                    req("POST", f"/{old}", {}, expect=(404, 405), why=f"/{old} takes no POST any more"),
                    req(
                        "GET",
                        f"/{old}/{ident(self.rng, 'some-id')}",
                        expect=(404,),
                        why=f"/{old}/{{id}} must answer 404",
                    ),
                ],
            )
        for entity, field, why in h.removed_fields:
            e = self.state.entity(entity)
            assert e is not None
            body = scalar_body(self.rng, self.state, e, ident(self.rng, f"{e.endpoint}-gone"))
            category = "rename" if why == "renamed" else "missing_feature"
            rule = {"renamed": "rename-field", "deleted": "delete-field", "dropped": "delete-entity"}[why]
            what = "field of a deleted reference" if why == "dropped" else f"{why} field"
            # The stale key is sent too, holding what no field accepts: a key that is not a current field is
            # ignored (never validated, stored or returned), in a POST and in a PATCH.
            path = f"/{e.endpoint}/{body['id']}"
            self.add(
                f"{e.endpoint}_{field}_gone",
                category,
                rule,
                [
                    req(
                        "POST",
                        f"/{e.endpoint}",
                        {**body, field: _STALE},
                        checks=(Absent(field),),
                        why=f"the {what} {field} must no longer be validated, stored or returned",
                    ),
                    req("GET", path, checks=(Absent(field),), why=f"{field} is gone"),
                    req(
                        "PATCH",
                        path,
                        {field: _STALE},
                        expect=OK,
                        checks=(Absent(field),),
                        why=f"{field} is no field any more: a PATCH holding it is handled as if it were absent",
                    ),
                ],
            )
        for path in h.removed_analytics:
            self.add(
                f"gone_analytics{path.replace('/', '_')}",
                "missing_feature",
                "unknown-path",
                [req("GET", path, expect=(404,), why=f"the removed analytics endpoint {path} must answer 404")],
            )
        for entity, action in h.removed_actions:
            e = self.state.entity(entity)
            assert e is not None
            body = scalar_body(self.rng, self.state, e, ident(self.rng, f"{e.endpoint}-gone"))
            self.add(
                f"{e.endpoint}_{action}_gone",
                "missing_feature",
                "unknown-path",
                [
                    req("POST", f"/{e.endpoint}", body),
                    req(
                        "POST",
                        f"/{e.endpoint}/{body['id']}/{action}",
                        expect=(404, 405),
                        action=True,
                        why=f"the removed action {action} must answer 404",
                    ),
                ],
            )
        for entity, field in h.renamed_targets:
            e = self.state.entity(entity)
            f = e.field(field) if e else None
            assert e is not None and f is not None
            fix, body = fixture_steps(
                self.rng,
                self.state,
                e,
                scalar_body(self.rng, self.state, e, ident(self.rng, f"{e.endpoint}-k")),
                only=field,
            )
            self.add(
                f"{e.endpoint}_{field}_keeps_name",
                "rename",
                "rename-entity",
                [
                    *fix,
                    req(
                        "POST",
                        f"/{e.endpoint}",
                        body,
                        checks=(Equals((field,), body[field]),),
                        why=f"{field} keeps its name after its target entity was renamed",
                    ),
                ],
            )
        for entity, old, new in h.renamed_fields:  # last: the data drawn above stays as it was
            self._old_key_ignored(entity, old, new)
        # After the rest, so that the data drawn above stays what it was before these tests existed.
        for entity, action, guard in h.removed_guards:
            if (test := removed_guard_test(self.state, entity, action, guard, self.rng)) is not None:
                self.add(*test)
        for entity, action, effect, index in h.removed_effects:
            if (test := removed_effect_test(self.state, entity, action, effect, index, self.rng)) is not None:
                self.add(*test)

    def _old_key_ignored(self, entity: str, old: str, new: str) -> None:
        """After `old` was renamed to `new`, a PATCH holding only the old key changes nothing (it is not an alias)."""
        e = self.state.entity(entity)
        f = e.field(new) if e else None
        assert e is not None and f is not None
        body = scalar_body(self.rng, self.state, e, ident(self.rng, f"{e.endpoint}-old-key"))
        if f.kind in ("ref", "ref_list") or body.get(new) is None:
            return
        other = other_value(self.rng, self.state, f, body[new])
        if other is None:
            return
        before = stored(self.state, e, body)
        path = f"/{e.endpoint}/{body['id']}"
        self.add(
            f"{e.endpoint}_{old}_old_key_ignored",
            "rename",
            "rename-field",
            [
                req("POST", f"/{e.endpoint}", body),
                req(
                    "PATCH",
                    path,
                    {old: other},
                    expect=OK,
                    checks=(Equals((new,), before[new]), Absent(old)),
                    why=f"{old} was renamed to {new}: the old key is ignored, not written to {new}",
                ),
                req("GET", path, checks=_equal_checks(before), why=f"the old key {old} must change nothing"),
            ],
        )


def _whole_number(f: Field) -> int:
    """An integer inside a float field's bounds."""
    lo = math.ceil(f.minimum) if f.minimum is not None else None
    hi = math.floor(f.maximum) if f.maximum is not None else None
    if lo is not None:
        return lo + 1 if hi is None or lo + 1 <= hi else lo
    return hi - 1 if hi is not None else 5


def _ids_left(fix: list[Any], ep: str, own: tuple[str, ...], victim: str) -> list[str]:
    """Ids of `ep` entities a cascade test leaves: its own entities and fixtures of the same type (self references)."""
    made = [s.body["id"] for s in fix if s.method == "POST" and s.path == f"/{ep}"]
    return [i for i in (*made, *own) if i != victim]


_NONE = object()
_STALE = {"removed": "key"}  # an old key's value: an object, which no field accepts


def _falsy(f: Field) -> Any:
    """A valid value that is false in a boolean context (0, false, ""), unless it is the default: else _NONE."""
    v: Any = _NONE
    if f.kind == "boolean":
        v = False
    elif (
        f.kind in ("integer", "float")
        and (f.minimum is None or f.minimum <= 0)
        and (f.maximum is None or f.maximum >= 0)
    ):
        v = 0
    elif f.kind == "string" and not f.min_length:
        v = ""
    return _NONE if v is _NONE or (f.has_default and f.default == v) else v


def _bad_date(f: Field, hour: bool = False) -> str:
    year = int((f.after or "2023")[:4]) + 1 if f.after else 2023
    if f.before and year > int(f.before[:4]):
        year = int(f.before[:4])
    return f"{year}-04-10 24:00:00" if hour else f"{year}-02-30 10:00:00"


def _shift(stamp: str, seconds: int) -> str:
    import datetime as dt

    t = dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S") + dt.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%d %H:%M:%S")


def _name(f: Field) -> str:
    return f.name


def _build(state: State, rng: SuiteRandom, history: History | None) -> _Builder:
    b = _Builder(state, rng)
    b.reset()
    for e in state.entities:
        b.entity(e)
        for f in e.fields:
            b.field(e, f)
    for a in state.analytics:
        b.analytics(a)
    for action in state.actions:
        for name, category, rule, steps, classes in action_tests(state, action, b.rng):
            b.add(name, category, rule, steps, classes)
    if history is not None:
        b.history(history)
    # Drawn last, so that the data of every test above stays what it was before raw bodies were tested.
    for e in state.entities:
        for test in (*rawbody.create_tests(b.rng, state, e), *rawbody.patch_tests(b.rng, state, e)):
            b.add(*test)
    for action in state.actions:
        for test in rawbody.action_tests(b.rng, state, action):
            b.add(*test)
    return b


def generate_suite(state: State, seed: int, turn: int, history: History | None = None, attempt: int = 1) -> Suite:
    """T's test list for one attempt of a turn (counted from 1, as the engine does); deterministic in
    (state, seed, turn, history, attempt).

    Every attempt has the same tests with data and ids of its own (see `draws`). A later attempt builds
    the first attempt's suite too, to learn what each of its tests picked, so it costs twice as much.
    """
    replay = None
    if attempt > 1:
        replay = _build(state, SuiteRandom(seed, turn), history).rng.picks
    b = _build(state, SuiteRandom(seed, turn, attempt, replay), history)
    return Suite(seed=seed, turn=turn, tests=tuple(b.tests))
