"""Tests of one entity as a whole: create, read, list, update, patch rejections and delete.

`entity_tests` draws the entity's bodies once (`EntityDraw`), then runs ENTITY_TESTS in order: each maker adds its
tests, drawing what else it needs. The table's order is the order of the draws, so it fixes every test's data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from staminad.bench.schema import Entity
from staminad.suite.builder import Builder, create_steps, field_name
from staminad.suite.classes import entity_class_tests
from staminad.suite.data import constrained, invalid_value, other_value, scalar_body, stored, stored_checks
from staminad.suite.draws import ident, pick
from staminad.suite.model import OK, OK_OR_EMPTY, REJECTED, Absent, Equals, ListIds, req
from staminad.suite.plans import fixture_steps


class EntityDraw(NamedTuple):
    """An entity's bodies, drawn before its tests: every field set (with its fixtures), the required fields
    only, and two more (`a`, `b`) the tests of a stored entity share."""

    b: Builder
    e: Entity
    full: dict[str, Any]
    fix: list[Any]
    minimal: dict[str, Any]
    a: dict[str, Any]
    other: dict[str, Any]

    @property
    def ep(self) -> str:
        return self.e.endpoint


def _draw(b: Builder, e: Entity) -> EntityDraw:
    rng, st, ep = b.rng, b.state, e.endpoint
    full = scalar_body(rng, st, e, ident(rng, f"{ep}-1"))
    fix, full = fixture_steps(rng, st, e, full)
    minimal = scalar_body(rng, st, e, ident(rng, f"{ep}-min"), full=False)
    a, other = scalar_body(rng, st, e, ident(rng, f"{ep}-a")), scalar_body(rng, st, e, ident(rng, f"{ep}-b"))
    return EntityDraw(b, e, full, fix, minimal, a, other)


def _create(d: EntityDraw) -> None:
    ep, st = d.ep, d.b.state
    steps = d.fix + create_steps(d.e, d.full, st, f"POST /{ep} with every field set must succeed")
    d.b.add(f"{ep}_create_and_read", "wrong_response_format", "create", steps)
    steps = create_steps(d.e, d.minimal, st, f"POST /{ep} with only the required fields must succeed")
    d.b.add(f"{ep}_create_minimal", "default_value", "default", steps)


def _list(d: EntityDraw) -> None:
    ep, a, b = d.ep, d.a, d.other
    listed = req("GET", f"/{ep}", checks=(ListIds((a["id"], b["id"])),), why=f"GET /{ep} must list both entities")
    d.b.add(f"{ep}_list", "wrong_response_format", "list", [req("POST", f"/{ep}", a), req("POST", f"/{ep}", b), listed])


def _read_unknown(d: EntityDraw) -> None:
    unknown = req("GET", f"/{d.ep}/{ident(d.b.rng, 'no-such-id')}", expect=(404,), why="an unknown id must answer 404")
    d.b.add(f"{d.ep}_read_unknown", "wrong_response_format", "read", [unknown])


def _delete(d: EntityDraw) -> None:
    ep, a = d.ep, d.a
    steps = [
        req("POST", f"/{ep}", a),
        req("DELETE", f"/{ep}/{a['id']}", expect=OK_OR_EMPTY, why="DELETE of an existing entity must succeed"),
        req("GET", f"/{ep}/{a['id']}", expect=(404,), why="a deleted entity must answer 404"),
        req("GET", f"/{ep}", checks=(ListIds(()),), why="a deleted entity must leave the list"),
        req("DELETE", f"/{ep}/{a['id']}", expect=(404,), why="deleting it again must answer 404"),
    ]
    d.b.add(f"{ep}_delete", "wrong_response_format", "delete", steps)


def _client_ids(d: EntityDraw) -> None:
    """The id is the client's: unique, required, a string."""
    ep, a = d.ep, d.a
    twice = req(
        "POST", f"/{ep}", {**d.other, "id": a["id"]}, expect=(400, 409, 422), why="a duplicate id must be rejected"
    )
    d.b.add(f"{ep}_duplicate_id", "validation", "client-id", [req("POST", f"/{ep}", a), twice], ("duplicate",))
    no_id = {k: v for k, v in a.items() if k != "id"}
    steps = [
        req("POST", f"/{ep}", no_id, expect=REJECTED, why="a POST without id must be rejected"),
        req("GET", f"/{ep}", checks=(ListIds(()),), why="a rejected POST must store nothing"),
    ]
    d.b.add(f"{ep}_missing_id", "validation", "client-id", steps)
    number = req("POST", f"/{ep}", {**a, "id": 12345}, expect=REJECTED, why="a number is not a string id")
    d.b.add(f"{ep}_numeric_id", "validation", "client-id", [number], ("number",))


def _id_characters(d: EntityDraw) -> None:
    """Ids take letters, digits, '-', '_', '.' and '~', and nothing else."""
    ep, a = d.ep, d.a
    odd = ident(d.b.rng, f"Id-0_{ep}.x~")
    steps = [
        req(
            "POST",
            f"/{ep}",
            {**a, "id": odd},
            checks=(Equals(("id",), odd),),
            why="ids may hold letters, digits, '-', '_', '.' and '~'",
        ),
        req("GET", f"/{ep}/{odd}", checks=(Equals(("id",), odd),), why=f"GET /{ep}/{odd} must read it back"),
    ]
    d.b.add(f"{ep}_id_characters", "wrong_response_format", "client-id", steps, ("every_allowed_character",))
    steps = [
        req("POST", f"/{ep}", {**a, "id": bad}, expect=REJECTED, why=f"the id {bad!r} must be rejected")
        for bad in ("", "a b", f"{ep}/1")
    ]
    d.b.add(f"{ep}_bad_ids", "validation", "client-id", steps, ("empty", "other_characters"))


def _unknown_key(d: EntityDraw) -> None:
    ep, a, e = d.ep, d.a, d.e
    stray = next(k for k in ("note_not_in_design", "stray_key_x", "stray_key_y") if e.field(k) is None)
    steps = [
        req(
            "POST",
            f"/{ep}",
            {**a, stray: "ignored"},
            expect=OK,
            checks=(Absent(stray),),
            why=f"{stray} is not a field of {e.name}: it must be ignored",
        ),
        req("GET", f"/{ep}/{a['id']}", checks=(Absent(stray),), why=f"{stray} must not be stored"),
    ]
    d.b.add(f"{ep}_ignores_unknown_key", "wrong_response_format", "unknown-keys", steps)


def _patch_unknown(d: EntityDraw) -> None:
    ep = d.ep
    steps = [
        req("PATCH", f"/{ep}/{ident(d.b.rng, 'no-such-id')}", {}, expect=(404,), why="PATCH of an unknown id is 404"),
        req("GET", f"/{ep}", checks=(ListIds(()),), why="a PATCH of an unknown id must create nothing"),
    ]
    d.b.add(f"{ep}_patch_unknown", "wrong_response_format", "update", steps)


def _patch_other_id(d: EntityDraw) -> None:
    ep, a = d.ep, d.a
    steps = [
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
    ]
    d.b.add(f"{ep}_patch_other_id", "validation", "patch-id", steps)


def _update(d: EntityDraw) -> None:
    """A PATCH of one scalar field changes that field only, and may hold the unchanged id."""
    ep, a, e, b = d.ep, d.a, d.e, d.b
    scalars = [f for f in e.fields if f.kind not in ("ref", "ref_list")]
    if not scalars:
        return
    f = pick(b.rng, f"{ep}_update", scalars, field_name)
    new = other_value(b.rng, b.state, f, a[f.name])
    if new is None:
        return
    after = {**stored(b.state, e, a), f.name: new}
    steps = [
        req("POST", f"/{ep}", a),
        req(
            "PATCH",
            f"/{ep}/{a['id']}",
            {f.name: new},
            checks=stored_checks(after),
            why=f"PATCH of {f.name} must change only that field",
        ),
        req("GET", f"/{ep}/{a['id']}", checks=stored_checks(after), why="the update must be stored"),
    ]
    b.add(f"{ep}_update", "wrong_response_format", "update", steps)
    same = req(
        "PATCH",
        f"/{ep}/{a['id']}",
        {"id": a["id"], f.name: new},
        checks=(Equals((f.name,), new),),
        why="a PATCH holding the unchanged id must be accepted",
    )
    b.add(f"{ep}_patch_same_id", "validation", "patch-id", [req("POST", f"/{ep}", a), same])


def _rejected_patch(d: EntityDraw, body: dict[str, Any], why: str, unchanged: str) -> list[Any]:
    """POST `a`, a PATCH of `body` that must be rejected (`why`), and a read showing it changed nothing."""
    ep, a = d.ep, d.a
    before = stored(d.b.state, d.e, a)
    return [
        req("POST", f"/{ep}", a),
        req("PATCH", f"/{ep}/{a['id']}", body, expect=REJECTED, why=why),
        req("GET", f"/{ep}/{a['id']}", checks=stored_checks(before), why=unchanged),
    ]


def _patch_rejections(d: EntityDraw) -> None:
    """A PATCH is validated like a POST, and a rejected one changes nothing (even its valid keys)."""
    ep, e, rng = d.ep, d.e, d.b.rng
    if not e.fields:
        return
    f = pick(rng, f"{ep}_patch_invalid", [f for f in e.fields if constrained(f)] or list(e.fields), field_name)
    nothing = "a rejected PATCH changes nothing"
    steps = _rejected_patch(d, {f.name: invalid_value(f)}, f"PATCH must validate {f.name} as POST does", nothing)
    d.b.add(f"{ep}_patch_invalid", "validation", "update", steps)
    strict = [x for x in e.fields if not x.nullable]
    if strict:
        nn = pick(rng, f"{ep}_patch_null", strict, field_name)
        why = f"{nn.name} is not nullable, in a PATCH as in a POST"
        d.b.add(f"{ep}_patch_null", "validation", "update", _rejected_patch(d, {nn.name: None}, why, nothing))
    _patch_atomic(d)


def _patch_atomic(d: EntityDraw) -> None:
    """A PATCH with one valid and one invalid key is rejected whole."""
    ep, e, a, rng = d.ep, d.e, d.a, d.b.rng
    changeable = [
        (g, v)
        for g in e.fields
        if g.kind not in ("ref", "ref_list")
        for v in [other_value(rng, d.b.state, g, a[g.name])]
        if v is not None
    ]
    if not changeable or len(e.fields) < 2:
        return
    g, new = pick(rng, f"{ep}_patch_atomic", changeable, lambda c: c[0].name)
    bad = pick(rng, f"{ep}_patch_atomic/invalid", [x for x in e.fields if x.name != g.name], field_name)
    why = f"{bad.name} is invalid, so the whole PATCH must be rejected"
    unchanged = f"a rejected PATCH changes nothing, not even the valid {g.name}"
    steps = _rejected_patch(d, {g.name: new, bad.name: invalid_value(bad)}, why, unchanged)
    d.b.add(f"{ep}_patch_atomic", "validation", "update", steps)


def _classes(d: EntityDraw) -> None:
    for name, category, rule, classes, steps in entity_class_tests(d.b.state, d.b.class_rng, d.e):
        d.b.add(name, category, rule, steps, classes)


# The entity's tests, in the order they draw their data (a new maker goes last, so no other test's data moves).
ENTITY_TESTS: tuple[Callable[[EntityDraw], None], ...] = (
    _create,
    _list,
    _read_unknown,
    _delete,
    _client_ids,
    _id_characters,
    _unknown_key,
    _patch_unknown,
    _patch_other_id,
    _update,
    _patch_rejections,
    _classes,
)


def entity_tests(b: Builder, e: Entity) -> None:
    """Add every test of entity `e` to `b` (ENTITY_TESTS over its drawn bodies)."""
    d = _draw(b, e)
    for make in ENTITY_TESTS:
        make(d)


__all__ = ["ENTITY_TESTS", "EntityDraw", "entity_tests"]
