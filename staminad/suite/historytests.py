"""Tests of what a turn removed, renamed or re-bounded: gone endpoints and fields, old keys ignored, new bounds
kept by PATCH.

`history_tests` runs HISTORY_TESTS in order, each over one list of the turn's `History`. The table's order is
the order of the draws, so it fixes every test's data.
"""

from __future__ import annotations

from collections.abc import Callable

from staminad.bench.schema import Entity
from staminad.bench.values import rebound_probes
from staminad.suite.builder import STALE, Builder
from staminad.suite.data import other_value, scalar_body, stored, stored_checks
from staminad.suite.draws import ident
from staminad.suite.history import History
from staminad.suite.model import OK, REJECTED, Absent, Equals, req
from staminad.suite.plans import fixture_steps
from staminad.suite.removals import removed_effect_test, removed_guard_test

RULES = {"renamed": "rename-field", "deleted": "delete-field", "dropped": "delete-entity"}


def _entity(b: Builder, name: str) -> Entity:
    e = b.state.entity(name)
    assert e is not None
    return e


def _gone_endpoints(b: Builder, h: History) -> None:
    for old in h.retired_endpoints:
        steps = [
            req("GET", f"/{old}", expect=(404,), why=f"/{old} no longer exists and must answer 404"),
            req("POST", f"/{old}", {}, expect=(404, 405), why=f"/{old} takes no POST any more"),
            req("GET", f"/{old}/{ident(b.rng, 'some-id')}", expect=(404,), why=f"/{old}/{{id}} must answer 404"),
        ]
        b.add(f"gone_endpoint_{old}", "regression", "unknown-path", steps)


def _gone_fields(b: Builder, h: History) -> None:
    for entity, field, why in h.removed_fields:
        e = _entity(b, entity)
        body = scalar_body(b.rng, b.state, e, ident(b.rng, f"{e.endpoint}-gone"))
        category = "rename" if why == "renamed" else "missing_feature"
        what = "field of a deleted reference" if why == "dropped" else f"{why} field"
        # The stale key is sent too, holding what no field accepts: a key that is not a current field is
        # ignored (never validated, stored or returned), in a POST and in a PATCH.
        path, absent = f"/{e.endpoint}/{body['id']}", (Absent(field),)
        steps = [
            req(
                "POST",
                f"/{e.endpoint}",
                {**body, field: STALE},
                checks=absent,
                why=f"the {what} {field} must no longer be validated, stored or returned",
            ),
            req("GET", path, checks=absent, why=f"{field} is gone"),
            req(
                "PATCH",
                path,
                {field: STALE},
                expect=OK,
                checks=absent,
                why=f"{field} is no field any more: a PATCH holding it is handled as if it were absent",
            ),
        ]
        b.add(f"{e.endpoint}_{field}_gone", category, RULES[why], steps)


def _gone_analytics(b: Builder, h: History) -> None:
    for path in h.removed_analytics:
        step = req("GET", path, expect=(404,), why=f"the removed analytics endpoint {path} must answer 404")
        b.add(f"gone_analytics{path.replace('/', '_')}", "missing_feature", "unknown-path", [step])


def _gone_actions(b: Builder, h: History) -> None:
    for entity, action in h.removed_actions:
        e = _entity(b, entity)
        body = scalar_body(b.rng, b.state, e, ident(b.rng, f"{e.endpoint}-gone"))
        call = req(
            "POST",
            f"/{e.endpoint}/{body['id']}/{action}",
            expect=(404, 405),
            action=True,
            why=f"the removed action {action} must answer 404",
        )
        b.add(
            f"{e.endpoint}_{action}_gone",
            "missing_feature",
            "unknown-path",
            [req("POST", f"/{e.endpoint}", body), call],
        )


def _renamed_targets(b: Builder, h: History) -> None:
    for entity, field in h.renamed_targets:
        e = _entity(b, entity)
        assert e.field(field) is not None
        drawn = scalar_body(b.rng, b.state, e, ident(b.rng, f"{e.endpoint}-k"))
        fix, body = fixture_steps(b.rng, b.state, e, drawn, only=field)
        why = f"{field} keeps its name after its target entity was renamed"
        post = req("POST", f"/{e.endpoint}", body, checks=(Equals((field,), body[field]),), why=why)
        b.add(f"{e.endpoint}_{field}_keeps_name", "rename", "rename-entity", [*fix, post])


def _old_keys_ignored(b: Builder, h: History) -> None:
    """After `old` was renamed to `new`, a PATCH holding only the old key changes nothing (it is not an alias)."""
    for entity, old, new in h.renamed_fields:
        e = _entity(b, entity)
        f = e.field(new)
        assert f is not None
        body = scalar_body(b.rng, b.state, e, ident(b.rng, f"{e.endpoint}-old-key"))
        if f.kind in ("ref", "ref_list") or body.get(new) is None:
            continue
        other = other_value(b.rng, b.state, f, body[new])
        if other is None:
            continue
        before = stored(b.state, e, body)
        path = f"/{e.endpoint}/{body['id']}"
        patch = req(
            "PATCH",
            path,
            {old: other},
            expect=OK,
            checks=(Equals((new,), before[new]), Absent(old)),
            why=f"{old} was renamed to {new}: the old key is ignored, not written to {new}",
        )
        steps = [
            req("POST", f"/{e.endpoint}", body),
            patch,
            req("GET", path, checks=stored_checks(before), why=f"the old key {old} must change nothing"),
        ]
        b.add(f"{e.endpoint}_{old}_old_key_ignored", "rename", "rename-field", steps)


def _gone_guards(b: Builder, h: History) -> None:
    for entity, action, guard in h.removed_guards:
        if (test := removed_guard_test(b.state, entity, action, guard, b.rng)) is not None:
            b.add(*test)


def _gone_effects(b: Builder, h: History) -> None:
    for entity, action, effect, index in h.removed_effects:
        if (test := removed_effect_test(b.state, entity, action, effect, index, b.rng)) is not None:
            b.add(*test)


def _rebounded(b: Builder, h: History) -> None:
    """After a change of bounds, a PATCH with a value the change made valid (200, stored) and one it made invalid
    (rejected, nothing changed): a PATCH validates by the same rules as POST, the new bounds."""
    for entity, field, old in h.rebounded:
        e = _entity(b, entity)
        f = e.field(field)
        assert f is not None
        valid, invalid = rebound_probes(b.state, old, f)
        if valid is None and invalid is None:
            continue
        body = scalar_body(b.rng, b.state, e, ident(b.rng, f"{e.endpoint}-rebound"))
        path, now = f"/{e.endpoint}/{body['id']}", stored(b.state, e, body)
        steps = [req("POST", f"/{e.endpoint}", body, why=f"create a {e.name} to PATCH")]
        if valid is not None:
            now = {**now, field: valid}
            why = f"the new bounds of {field} admit {valid!r}: a PATCH stores it"
            steps.append(req("PATCH", path, {field: valid}, expect=(200,), checks=(Equals((field,), valid),), why=why))
        if invalid is not None:
            why = f"the new bounds of {field} exclude {invalid!r}: a PATCH is rejected"
            steps.append(req("PATCH", path, {field: invalid}, expect=REJECTED, why=why))
        steps.append(req("GET", path, checks=stored_checks(now), why=f"{field} holds what the new bounds allowed"))
        b.add(f"{e.endpoint}_{field}_bounds_changed_patch", "validation", "update", steps)


# The turn's history tests, in the order they draw their data: the old keys, guards and effects came after the
# rest, so that the data drawn above stayed what it was before these tests existed (a new maker goes last too).
HISTORY_TESTS: tuple[Callable[[Builder, History], None], ...] = (
    _gone_endpoints,
    _gone_fields,
    _gone_analytics,
    _gone_actions,
    _renamed_targets,
    _old_keys_ignored,
    _gone_guards,
    _gone_effects,
    _rebounded,
)


def history_tests(b: Builder, h: History) -> None:
    """Add every test of what the turn's history removed or renamed to `b` (HISTORY_TESTS)."""
    for make in HISTORY_TESTS:
        make(b, h)


__all__ = ["HISTORY_TESTS", "history_tests"]
