"""The OpenAPI export is a valid OpenAPI 3.1 document that says what the README and the specification say."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate

from staminad.bench.datetimes import datetime_pattern
from staminad.bench.openapi import openapi
from staminad.bench.scenario import ScenarioParams, generate
from staminad.bench.schema import Field, State

STATES = [generate(seed, ScenarioParams(turns=40)).state_at(turn) for seed in range(4) for turn in (0, 20, 40)]


def _valid(doc: dict[str, Any], schema: dict[str, Any], value: Any) -> bool:
    resolver_doc = {"components": doc["components"], **schema}
    return bool(jsonschema.Draft202012Validator(resolver_doc).is_valid(value))


def _fields(kind: str | None = None) -> list[tuple[State, str, Field]]:
    return [(s, e.name, f) for s in STATES for e in s.entities for f in e.fields if kind in (None, f.kind)]


@pytest.mark.parametrize("turn", [0, 20, 60])
def test_openapi_document_is_valid_and_complete(turn: int) -> None:
    """Every entity, analytics and action path appears, and the document validates as OpenAPI 3.1."""
    state = generate(2, ScenarioParams(turns=60)).state_at(turn)
    doc = openapi(state)
    validate(doc)
    for e in state.entities:
        assert f"/{e.endpoint}" in doc["paths"] and f"/{e.endpoint}/{{id}}" in doc["paths"]
    assert all(a.path() in doc["paths"] for a in state.analytics)
    assert all(f"/{a.entity.lower()}/{{id}}/{a.name}" in doc["paths"] for a in state.actions)


def test_responses_allow_null_where_omission_stores_null() -> None:
    """[omitted]: an optional non-nullable field without a default is null in responses, never in requests."""
    seen = 0
    for state, entity, f in _fields():
        if f.kind == "ref_list" or f.nullable or f.required or f.has_default:
            continue
        doc = openapi(state)
        schemas = doc["components"]["schemas"]
        out, create = schemas[entity]["properties"][f.name], schemas[f"{entity}Create"]["properties"][f.name]
        assert _valid(doc, out, None) and not _valid(doc, create, None)
        assert f.name in schemas[entity]["required"] and f.name not in schemas[f"{entity}Create"]["required"]
        seen += 1
    assert seen > 5


def test_required_and_defaulted_fields_are_never_null_unless_nullable() -> None:
    """A required or defaulted non-nullable field is never null, in a request or a response."""
    for state, entity, f in _fields():
        if f.kind == "ref_list" or f.nullable or not (f.required or f.has_default):
            continue
        doc = openapi(state)
        for name in (entity, f"{entity}Create", f"{entity}Update"):
            assert not _valid(doc, doc["components"]["schemas"][name]["properties"][f.name], None)


def test_patch_bodies_hold_every_field_optionally_with_post_constraints() -> None:
    """[update]/[patch-id]: a PATCH body lists id and every field, requires none, and bounds each as POST does."""
    for state in STATES:
        doc = openapi(state)
        for e in state.entities:
            patch = doc["components"]["schemas"][f"{e.name}Update"]
            create = doc["components"]["schemas"][f"{e.name}Create"]
            assert set(patch["properties"]) == {"id", *(f.name for f in e.fields)}
            assert "required" not in patch and patch.get("additionalProperties", True) is True
            for f in e.fields:
                expected = {k: v for k, v in create["properties"][f.name].items() if k != "default"}
                assert patch["properties"][f.name] == expected
            body = doc["paths"][f"/{e.endpoint}/{{id}}"]["patch"]["requestBody"]["content"]["application/json"]
            assert body["schema"] == {"$ref": f"#/components/schemas/{e.name}Update"}


def test_bounds_apply_to_input_but_not_to_fields_effects_write() -> None:
    """[range]/[effects]: bounds hold for request bodies; a response drops them only for effect-written fields."""
    checked = 0
    for state, entity, f in _fields():
        if f.kind not in ("integer", "float") or f.maximum is None:
            continue
        doc = openapi(state)
        schemas = doc["components"]["schemas"]
        over = f.maximum + 1
        assert not _valid(doc, schemas[f"{entity}Create"]["properties"][f.name], over)
        written = any(
            getattr(x, "field", None) == f.name or getattr(getattr(x, "effect", None), "field", None) == f.name
            for a in state.actions
            for x in a.effects
        )
        if not written:
            assert not _valid(doc, schemas[entity]["properties"][f.name], over)
            checked += 1
    assert checked > 3


def test_analytics_results_are_typed_per_operation() -> None:
    """[analytics]: count is a non-null integer, sum never null (integer over integers), avg/min/max nullable."""
    ops = set()
    for state in STATES:
        doc = openapi(state)
        for a in state.analytics:
            result = doc["paths"][a.path()]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
            assert result["required"] == ["result"]
            r = result["properties"]["result"]
            owner = state.entity(a.entity)
            f = owner.field(a.field) if owner and a.field else None
            integer = f is not None and f.kind == "integer"
            ok = {
                "count": [3],
                "sum": [3] if integer else [3, 2.5],
                "avg": [2.5, None],
                "min": [3, None] if integer else [2.5, None],
                "max": [3, None] if integer else [2.5, None],
            }[a.op]
            bad = {
                "count": [None, 2.5, -1],
                "sum": [None, 2.5] if integer else [None],
                "avg": ["x"],
                "min": [2.5] if integer else ["x"],
                "max": [2.5] if integer else ["x"],
            }[a.op]
            assert all(_valid(doc, r, v) for v in ok) and not any(_valid(doc, r, v) for v in bad), (a, r)
            ops.add((a.op, integer))
    assert {op for op, _ in ops} == {"count", "sum", "avg", "min", "max"}


def test_create_links_to_every_operation_on_the_created_id() -> None:
    """A POST's 200/201 link to GET, PATCH, DELETE and every action on `$response.body#/id`."""
    for state in STATES:
        doc = openapi(state)
        op_ids = {op["operationId"] for item in doc["paths"].values() for m, op in item.items() if m != "parameters"}
        assert len(op_ids) == sum(1 for item in doc["paths"].values() for m in item if m != "parameters")
        for e in state.entities:
            post = doc["paths"][f"/{e.endpoint}"]["post"]
            for status in ("200", "201"):
                links = post["responses"][status]["links"]
                targets = {link["operationId"] for link in links.values()}
                expected = {
                    f"get{e.name}",
                    f"update{e.name}",
                    f"delete{e.name}",
                    *(f"{a.name}{e.name}" for a in state.actions if a.entity == e.name),
                }
                assert targets == expected and targets <= op_ids
                assert all(link["parameters"] == {"id": "$response.body#/id"} for link in links.values())


def test_every_status_the_readme_names_is_declared() -> None:
    """CRUD, /reset, DELETE and actions declare each status code their README rules allow."""
    for state in STATES:
        doc = openapi(state)
        reset = doc["paths"]["/reset"]["post"]["responses"]
        assert set(reset) == {"200", "204"}
        assert _valid(doc, reset["200"]["content"]["application/json"]["schema"], {"status": "reset"})
        for e in state.entities:
            item, coll = doc["paths"][f"/{e.endpoint}/{{id}}"], doc["paths"][f"/{e.endpoint}"]
            assert set(coll["post"]["responses"]) == {"200", "201", "400", "409", "422"}
            assert set(item["get"]["responses"]) == {"200", "404"}
            assert set(item["patch"]["responses"]) == {"200", "400", "404", "422"}
            assert set(item["delete"]["responses"]) == {"200", "204", "404"}
        for a in state.actions:
            act = doc["paths"][f"/{a.entity.lower()}/{{id}}/{a.name}"]["post"]
            assert set(act["responses"]) == {"200", "400", "404", "409"}
            assert "requestBody" not in act


def test_ids_are_unreserved_characters() -> None:
    """[client-id]: a POST body's id is a non-empty string that needs no percent-encoding in a path."""
    doc = openapi(STATES[0])
    e = STATES[0].entities[0]
    id_schema = doc["components"]["schemas"][f"{e.name}Create"]["properties"]["id"]
    assert all(_valid(doc, id_schema, v) for v in ("a", "batch-1", "X.y_~9"))
    assert not any(_valid(doc, id_schema, v) for v in ("", "a b", "a/b", "é", 3))


def test_datetime_fields_export_their_bounds() -> None:
    """[datetime]: bounded datetime fields carry their bounds in the pattern and as x-after / x-before."""
    bounded = [(s, n, f) for s, n, f in _fields("datetime") if f.after or f.before]
    assert bounded
    for state, entity, f in bounded:
        prop = openapi(state)["components"]["schemas"][f"{entity}Create"]["properties"][f.name]
        prop = prop["anyOf"][0] if "anyOf" in prop else prop
        assert prop.get("x-after") == f.after and prop.get("x-before") == f.before
        assert prop["pattern"] == datetime_pattern(f.after, f.before)


_BOUNDS = [
    (None, None),
    ("2020-01-01 00:00:00", "2026-12-31 23:59:59"),
    ("2015-01-01 00:00:00", "2030-12-31 23:59:59"),
    ("2021-06-01 00:00:00", "2035-01-01 00:00:00"),
    ("2018-01-01 00:00:00", "2027-12-31 23:59:59"),
    ("2000-02-28 10:30:15", "2000-03-01 09:59:58"),
    ("2019-12-31 23:59:59", "2020-01-01 00:00:00"),
]
_digits = st.text(alphabet="0123456789", min_size=14, max_size=14)
_near = st.sampled_from(
    [
        "2000-02-29 00:00:00",
        "1900-02-29 12:00:00",
        "2023-02-30 10:00:00",
        "2024-02-29 23:59:59",
        "2021-06-01 00:00:00",
        "2035-01-01 00:00:00",
        "2035-01-01 00:00:01",
        "0000-01-01 00:00:00",
        "2020-04-31 10:00:00",
        "2020-12-31 24:00:00",
        "2020-13-01 00:00:00",
        "2026-12-31 23:59:59",
    ]
)


def _as_datetime(d: str) -> str:
    return f"{d[0:4]}-{d[4:6]}-{d[6:8]} {d[8:10]}:{d[10:12]}:{d[12:14]}"


def _mutate(base: str, pos: int, digit: str) -> str:
    positions = [i for i, c in enumerate(base) if c.isdigit()]
    i = positions[pos % len(positions)]
    return base[:i] + digit + base[i + 1 :]


@settings(max_examples=600, deadline=None)
@given(
    st.sampled_from(_BOUNDS),
    st.one_of(
        _digits.map(_as_datetime), st.builds(_mutate, _near, st.integers(0, 13), st.sampled_from("0123456789")), _near
    ),
)
def test_datetime_pattern_matches_exactly_the_valid_datetimes_in_bounds(
    bounds: tuple[str | None, str | None], value: str
) -> None:
    """The pattern admits a string iff it names a real calendar datetime within the inclusive bounds."""
    after, before = bounds
    try:
        dt.datetime.strptime(value, "%Y-%m-%d %H:%M:%S")
        real = True
    except ValueError:
        real = False
    expected = real and (after is None or value >= after) and (before is None or value <= before)
    assert bool(re.search(datetime_pattern(after, before), value)) == expected
