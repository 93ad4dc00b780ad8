"""Raw-body tests: every endpoint that takes a body is sent bodies `json.dumps` can never produce.

The README says request bodies are JSON and that bad input never produces a 500. Ordinary steps
always send a well-formed JSON object as `application/json`, so a server that crashes on malformed
JSON, on a JSON value that is not an object, on `NaN`, on an empty body or on a missing Content-Type
passed every test. These tests send those bodies byte for byte (`model.raw_req`) to `POST /{entity}`,
`PATCH /{entity}/{id}` and every action, at every turn the endpoint exists.

What each answer may be is only what the texts pin down, never one server's choice:
- a create cannot succeed without a JSON object holding a string `id`, so every such body is
  rejected (400 or 422, or 415 for a parser that insists on its media type) and nothing is stored;
- a PATCH of a body that holds no field may be read as a change of nothing (200) or rejected
  (400, 415, 422); either way the entity is unchanged;
- an action needs no body, so it may ignore what it is sent (200, or 400/409 by the entity's state)
  or reject it (400, 415, 422);
- a valid body without a Content-Type (or with `text/plain`) may be read as JSON or refused, and a
  duplicate key may keep either value or be refused: only a 5xx is wrong there.
"""

from __future__ import annotations

import json
from typing import Any

from staminad.bench.schema import Action, Entity, State
from staminad.suite.data import scalar_body, stored, stored_checks
from staminad.suite.draws import SuiteRandom, ident, pick
from staminad.suite.model import OK, ListIds, Step, raw_req, req

RawTest = tuple[str, str, str, list[Step]]
RULE = "json"  # "Request and response bodies are JSON" (the 500 ban is stated with the types)
BODY_REJECTED = (400, 415, 422)
NO_CHANGE = (200, *BODY_REJECTED)
ACTION_ANSWERS = (200, 400, 409, 415, 422)
_NO_500 = "bad input must never produce a 500"


def _dump(value: Any) -> bytes:
    return json.dumps(value).encode()


def _not_objects(body: dict[str, Any]) -> list[tuple[bytes, str]]:
    """Bodies that are not one JSON object (each with what it is): malformed text and other JSON values."""
    text = json.dumps(body)
    return [
        (text[: max(1, len(text) // 2)].encode(), "truncated JSON"),
        (b"not json", "text that is not JSON"),
        (_dump([body]), "a JSON array"),
        (_dump(str(body.get("id", "x"))), "a JSON string"),
        (b"12345", "a JSON number"),
        (b"null", "JSON null"),
        (b"true", "JSON true"),
        (b"", "an empty body"),
    ]


def with_token(body: dict[str, Any], key: str, token: str) -> bytes:
    """`body` as JSON with `key` set to the bare token `token` (NaN, Infinity), which JSON does not have."""
    rest = json.dumps({k: v for k, v in body.items() if k != key})
    inner = rest[1:-1]
    return ("{" + (inner + ", " if inner else "") + json.dumps(key) + ": " + token + "}").encode()


def _duplicated(body: dict[str, Any], key: str, first: Any) -> bytes:
    """`body` as JSON with `key` written twice: `first`, then its value in `body` (parsers keep either)."""
    return ("{" + json.dumps(key) + ": " + json.dumps(first) + ", " + json.dumps(body)[1:]).encode()


def create_tests(rng: SuiteRandom, state: State, e: Entity) -> list[RawTest]:
    """POST /{entity} with bodies that cannot create anything, then ones a server may read or refuse."""
    ep = e.endpoint
    a = scalar_body(rng, state, e, ident(rng, f"{ep}-raw"))
    bad = [
        raw_req("POST", f"/{ep}", raw, expect=BODY_REJECTED, why=f"POST /{ep} with {what} must be rejected ({_NO_500})")
        for raw, what in _not_objects(a)
    ]
    bad += [
        raw_req(
            "POST",
            f"/{ep}",
            with_token(a, "id", token),
            expect=BODY_REJECTED,
            why=f'POST /{ep} with `"id": {token}` (not JSON, never a string id) must be rejected ({_NO_500})',
        )
        for token in ("NaN", "Infinity")
    ]
    bad.append(raw_req("POST", f"/{ep}", b"", None, expect=BODY_REJECTED, why=f"an empty POST /{ep} must be rejected"))
    bad.append(req("GET", f"/{ep}", checks=(ListIds(()),), why="a rejected POST must store nothing"))
    b = scalar_body(rng, state, e, ident(rng, f"{ep}-untyped"))
    c = scalar_body(rng, state, e, ident(rng, f"{ep}-plain"))
    d = scalar_body(rng, state, e, ident(rng, f"{ep}-twice"))
    either = (*OK, *BODY_REJECTED)
    loose = [
        raw_req(
            "POST",
            f"/{ep}",
            _dump(b),
            None,
            expect=either,
            why=f"POST /{ep} without a Content-Type: read it or refuse it",
        ),
        raw_req(
            "POST", f"/{ep}", _dump(c), "text/plain", expect=either, why=f"POST /{ep} as text/plain: read or refuse"
        ),
        raw_req(
            "POST",
            f"/{ep}",
            _duplicated(d, "id", 12345),
            expect=either,
            why=f"POST /{ep} with `id` given twice: keep either value or refuse it, never a 500",
        ),
    ]
    return [(f"{ep}_create_bad_body", "validation", RULE, bad), (f"{ep}_create_loose_body", "validation", RULE, loose)]


def patch_tests(rng: SuiteRandom, state: State, e: Entity) -> list[RawTest]:
    """PATCH /{entity}/{id} with bodies holding no usable field: answered without a 500, changing nothing."""
    ep = e.endpoint
    a = scalar_body(rng, state, e, ident(rng, f"{ep}-rawp"))
    path = f"/{ep}/{a['id']}"
    unchanged = stored_checks(stored(state, e, a))
    steps: list[Step] = [req("POST", f"/{ep}", a)]
    steps += [
        raw_req("PATCH", path, raw, expect=NO_CHANGE, why=f"PATCH {path} with {what}: no 500 and no change")
        for raw, what in _not_objects({"id": a["id"]})
    ]
    steps += [
        raw_req(
            "PATCH",
            path,
            with_token({}, "id", "NaN"),
            expect=NO_CHANGE,
            why=f'PATCH {path} with `"id": NaN` (not JSON, not the entity\'s id): no 500 and no change',
        ),
        raw_req("PATCH", path, b"", None, expect=NO_CHANGE, why=f"an empty PATCH {path}: no 500 and no change"),
        raw_req(
            "PATCH",
            path,
            _dump({"id": a["id"]}),
            None,
            expect=NO_CHANGE,
            why=f"PATCH {path} without a Content-Type: read it or refuse it, never a 500",
        ),
        raw_req(
            "PATCH",
            path,
            _duplicated({"id": a["id"]}, "id", ident(rng, f"{ep}-other")),
            expect=NO_CHANGE,
            why=f"PATCH {path} with `id` given twice: keep either value or refuse it, never a 500",
        ),
        req("GET", path, checks=unchanged, why="a PATCH holding no field must change nothing"),
    ]
    return [(f"{ep}_patch_bad_body", "validation", RULE, steps)]


def action_tests(rng: SuiteRandom, state: State, action: Action) -> list[RawTest]:
    """An action sent bodies it does not need: it may ignore or refuse them, never answer 5xx."""
    e = state.entity(action.entity)
    assert e is not None
    ep = e.endpoint
    a = scalar_body(rng, state, e, ident(rng, f"{ep}-rawa"))
    # The state it starts in is a pick, so every attempt of the turn calls the action from the same state.
    a[action.field] = pick(rng, f"{ep}_{action.name}_bad_body", action.sources)
    path = f"/{ep}/{a['id']}/{action.name}"
    steps: list[Step] = [req("POST", f"/{ep}", a)]
    steps += [
        raw_req("POST", path, raw, expect=ACTION_ANSWERS, action=True, why=f"POST {path} with {what}: {_NO_500}")
        for raw, what in _not_objects({"id": a["id"]})
    ]
    steps.append(
        raw_req("POST", path, b"{}", "text/plain", expect=ACTION_ANSWERS, action=True, why=f"POST {path} as text/plain")
    )
    return [(f"{ep}_{action.name}_bad_body", "validation", RULE, steps)]
