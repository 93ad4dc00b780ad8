"""Tests of one entity as a whole: create, read, list, update, patch rejections and delete."""

from __future__ import annotations

from typing import Any

from staminad.bench.schema import Entity
from staminad.suite.builder import Builder, create_steps, field_name
from staminad.suite.classes import entity_class_tests
from staminad.suite.data import constrained, invalid_value, other_value, scalar_body, stored, stored_checks
from staminad.suite.draws import ident, pick
from staminad.suite.model import OK, OK_OR_EMPTY, REJECTED, Absent, Equals, ListIds, req
from staminad.suite.plans import fixture_steps


class EntityTests(Builder):
    """Tests of one entity as a whole: create, read, list, update, patch rejections and delete."""

    def entity(self, e: Entity) -> None:
        rng, st, ep = self.rng, self.state, e.endpoint
        full = scalar_body(rng, st, e, ident(rng, f"{ep}-1"))
        fix, full = fixture_steps(rng, st, e, full)
        self.add(
            f"{ep}_create_and_read",
            "wrong_response_format",
            "create",
            fix + create_steps(e, full, st, f"POST /{ep} with every field set must succeed"),
        )
        minimal = scalar_body(rng, st, e, ident(rng, f"{ep}-min"), full=False)
        self.add(
            f"{ep}_create_minimal",
            "default_value",
            "default",
            create_steps(e, minimal, st, f"POST /{ep} with only the required fields must succeed"),
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
        f = pick(rng, f"{ep}_patch_invalid", picked, field_name)
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
                req("GET", f"/{ep}/{a['id']}", checks=stored_checks(before), why="a rejected PATCH changes nothing"),
            ],
        )
        strict = [x for x in e.fields if not x.nullable]
        if strict:
            nn = pick(rng, f"{ep}_patch_null", strict, field_name)
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
                        "GET", f"/{ep}/{a['id']}", checks=stored_checks(before), why="a rejected PATCH changes nothing"
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
        bad = pick(rng, f"{ep}_patch_atomic/invalid", [x for x in e.fields if x.name != g.name], field_name)
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
                    checks=stored_checks(before),
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
        f = pick(self.rng, f"{ep}_update", scalars, field_name)
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
                    checks=stored_checks(after),
                    why=f"PATCH of {f.name} must change only that field",
                ),
                req("GET", f"/{ep}/{a['id']}", checks=stored_checks(after), why="the update must be stored"),
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
