"""Tests of one field: its type, default, bounds, enum values and references."""

from __future__ import annotations

from typing import Any

from staminad.bench.schema import Entity, Field
from staminad.suite.builder import NO_VALUE, Builder, bad_date, falsy_value, ids_left, shift, whole_number
from staminad.suite.classes import EDGE_CLASSES, WRONG_TYPE_CLASSES, class_tests
from staminad.suite.data import datetime_probe, object_value, scalar_body, wide_string, wrong_type_values
from staminad.suite.draws import ident
from staminad.suite.inputclass import Ctx
from staminad.suite.model import OK, OK_OR_EMPTY, REJECTED, Equals, ListIds, req
from staminad.suite.plans import fixture_steps


class FieldTests(Builder):
    """Tests of one field: its type, default, bounds, enum values and references."""

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
        falsy = falsy_value(f)
        if falsy is not NO_VALUE:
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
            whole = whole_number(f)
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
                ("bad_calendar", bad_date(f), False),
                ("bad_hour", datetime_probe(f, "hour") or bad_date(f, hour=True), False),
                ("bad_leap_day", datetime_probe(f, "leap") or "2023-02-29 10:00:00", False),
                ("bad_no_seconds", datetime_probe(f, "short") or "2024-03-15 10:00", False),
            ]
            if f.after is not None:
                edges += [("at_after", f.after, True), ("before_after", shift(f.after, -1), False)]
            if f.before is not None:
                edges += [("at_before", f.before, True), ("after_before", shift(f.before, 1), False)]
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
                    checks=(ListIds(tuple(ids_left(fix, ep, (base["id"], second["id"]), victim))),),
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
