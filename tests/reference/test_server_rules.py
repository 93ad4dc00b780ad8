"""The reference server follows the rules the README states for ids, unknown keys, numbers and datetimes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from staminad.reference.server import App

SCHEMA: dict[str, Any] = {
    "enums": [],
    "entities": [
        {
            "name": "CoffeeBatch",
            "fields": [
                {"name": "weight", "kind": "float", "required": True, "minimum": 0.0},
                {"name": "cups", "kind": "integer", "maximum": 10},
                {"name": "label", "kind": "string", "max_length": 3},
                {"name": "roasted", "kind": "datetime"},
            ],
        }
    ],
    "analytics": [],
    "actions": [],
}


def _call(app: App, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    return app.handle(method, path, b"" if body is None else json.dumps(body).encode())


@pytest.mark.parametrize("oid", ["", "a b", "a/b", "café", "x?y", "50%"])
def test_ids_that_need_percent_encoding_or_are_empty_are_rejected(oid: str) -> None:
    """An empty id, or one with a character outside `A-Z a-z 0-9 - _ . ~`, is rejected and nothing is stored."""
    app = App({"schema": SCHEMA})
    assert _call(app, "POST", "/coffeebatch", {"id": oid, "weight": 1})[0] == 400
    assert _call(app, "GET", "/coffeebatch") == (200, [])


def test_every_allowed_id_character_is_accepted_and_served() -> None:
    """An id of unreserved characters is stored and readable at its path."""
    app = App({"schema": SCHEMA})
    oid = "Az09-_.~"
    assert _call(app, "POST", "/coffeebatch", {"id": oid, "weight": 1})[0] == 201
    assert _call(app, "GET", f"/coffeebatch/{oid}")[1]["id"] == oid


def test_unknown_keys_are_ignored_not_stored() -> None:
    """A body key that is not a field changes nothing and is never returned."""
    app = App({"schema": SCHEMA})
    status, obj = _call(app, "POST", "/coffeebatch", {"id": "b1", "weight": 1, "old_name": 3})
    assert status == 201 and "old_name" not in obj
    status, obj = _call(app, "PATCH", "/coffeebatch/b1", {"old_name": 4, "cups": 2})
    assert status == 200 and "old_name" not in obj and obj["cups"] == 2


def test_numbers_follow_the_types_rule() -> None:
    """A float field takes 5; an integer field rejects 5.0, 2.5, "3" and true; a boolean is never a number."""
    app = App({"schema": SCHEMA})
    assert _call(app, "POST", "/coffeebatch", {"id": "f", "weight": 5})[1]["weight"] == 5
    for bad in (5.0, 2.5, "3", True):
        assert _call(app, "POST", "/coffeebatch", {"id": "i", "weight": 1, "cups": bad})[0] == 400
    assert _call(app, "POST", "/coffeebatch", {"id": "b", "weight": False})[0] == 400


def test_length_counts_characters() -> None:
    """Three two-byte characters fit a three-character bound; four do not."""
    app = App({"schema": SCHEMA})
    assert _call(app, "POST", "/coffeebatch", {"id": "a", "weight": 1, "label": "äöü"})[0] == 201
    assert _call(app, "POST", "/coffeebatch", {"id": "b", "weight": 1, "label": "äöüé"})[0] == 400


@pytest.mark.parametrize(
    "stamp",
    ["2023-02-29 10:00:00", "2024-04-10 24:00:00", "2024-04-10T10:00:00", "2024-04-10 10:00", "2023-02-30 10:00:00"],
)
def test_impossible_or_malformed_datetimes_are_rejected(stamp: str) -> None:
    """Feb 29 of a non-leap year, hour 24, a `T`, missing seconds and Feb 30 are all invalid."""
    app = App({"schema": SCHEMA})
    assert _call(app, "POST", "/coffeebatch", {"id": "d", "weight": 1, "roasted": stamp})[0] == 400
    assert _call(app, "POST", "/coffeebatch", {"id": "d", "weight": 1, "roasted": "2024-02-29 23:59:59"})[0] == 201


def test_a_rejected_patch_changes_nothing() -> None:
    """A PATCH with one valid and one invalid key is rejected as a whole."""
    app = App({"schema": SCHEMA})
    _call(app, "POST", "/coffeebatch", {"id": "p", "weight": 1, "cups": 1})
    assert _call(app, "PATCH", "/coffeebatch/p", {"cups": 2, "label": "toolong"})[0] == 400
    assert _call(app, "GET", "/coffeebatch/p")[1]["cups"] == 1


REF_SCHEMA: dict[str, Any] = {
    "enums": [],
    "entities": [
        {"name": "Shelf", "fields": []},
        {
            "name": "Jar",
            "fields": [
                {"name": "shelf", "kind": "ref", "target": "Shelf"},
                {"name": "shelves", "kind": "ref_list", "target": "Shelf"},
            ],
        },
    ],
    "analytics": [],
    "actions": [],
}


@pytest.mark.parametrize("body", [{"shelf": {}}, {"shelf": []}, {"shelf": 3}, {"shelves": [{}]}, {"shelves": {}}])
def test_a_reference_of_the_wrong_type_is_rejected_not_a_crash(body: dict[str, Any]) -> None:
    """An object, list or number where a reference or a list of references belongs is a 400, on POST and PATCH."""
    app = App({"schema": REF_SCHEMA})
    assert _call(app, "POST", "/jar", {"id": "j", **body})[0] == 400
    assert _call(app, "POST", "/jar", {"id": "j"})[0] == 201
    assert _call(app, "PATCH", "/jar/j", body)[0] == 400
