"""Tests of what a turn removed or renamed: gone endpoints and fields, old keys ignored."""

from __future__ import annotations

from staminad.suite.builder import STALE, Builder
from staminad.suite.data import other_value, scalar_body, stored, stored_checks
from staminad.suite.draws import ident
from staminad.suite.history import History
from staminad.suite.model import OK, Absent, Equals, req
from staminad.suite.plans import fixture_steps
from staminad.suite.removals import removed_effect_test, removed_guard_test


class HistoryTests(Builder):
    """Tests of what a turn removed or renamed: gone endpoints and fields, old keys ignored."""

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
                        {**body, field: STALE},
                        checks=(Absent(field),),
                        why=f"the {what} {field} must no longer be validated, stored or returned",
                    ),
                    req("GET", path, checks=(Absent(field),), why=f"{field} is gone"),
                    req(
                        "PATCH",
                        path,
                        {field: STALE},
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
                req("GET", path, checks=stored_checks(before), why=f"the old key {old} must change nothing"),
            ],
        )
