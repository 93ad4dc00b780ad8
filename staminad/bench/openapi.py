"""An OpenAPI 3.1 document for a state, so standard API tooling can be pointed at any agent's server.

It says everything the README rules and the specification say that JSON Schema can say: what a
POST or PATCH body may hold (types, bounds, lengths, enums, real calendar datetimes inside their
bounds, nullability, defaults), what every response holds (an entity as stored: omitted optional
fields come back null, effects may leave bounds), the typed result of each analytics endpoint,
every status code each operation may answer, and links from a create to the operations on the
created id. What it cannot say (a reference must name a stored entity, a PATCH `id` must equal the
path's) is written in descriptions.
"""

from __future__ import annotations

from typing import Any

from staminad.bench.datetimes import datetime_pattern
from staminad.bench.schema import Action, Analytics, Effect, Entity, Field, ForEach, OnReference, State

# The README says nothing about keys a body holds beyond the entity's fields, so the document does
# not forbid them (additionalProperties stays open on request bodies).
# [client-id]: ids are RFC 3986 unreserved characters, so they travel in a path without percent-encoding.
ID_PATTERN = r"^[A-Za-z0-9._~-]+$"
_REJECTED = "rejected input: [required], [null], [types], [enum], [range], [length], [datetime], [reference]"
_NOT_FOUND = {"description": "no entity with this id ([read])"}


def _err(text: str) -> dict[str, Any]:
    return {"description": text}


def _nullable(s: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [s, {"type": "null"}]}


def _value_schema(state: State, f: Field, bounded: bool) -> dict[str, Any]:
    """The non-null values of `f`; with `bounded` False the bounds client input must respect are left out."""
    s: dict[str, Any]
    if f.kind == "string":
        s = {"type": "string"}
        if bounded and f.min_length is not None:
            s["minLength"] = f.min_length
        if bounded and f.max_length is not None:
            s["maxLength"] = f.max_length
    elif f.kind in ("integer", "float"):
        s = {"type": "integer" if f.kind == "integer" else "number"}
        if bounded and f.minimum is not None:
            s["minimum"] = f.minimum
        if bounded and f.maximum is not None:
            s["maximum"] = f.maximum
    elif f.kind == "boolean":
        s = {"type": "boolean"}
    elif f.kind == "enum":
        en = state.enum(f.enum or "")
        s = {"type": "string", "enum": list(en.values) if en else []}
    elif f.kind == "datetime":
        s = {
            "type": "string",
            "pattern": datetime_pattern(f.after, f.before),
            "description": "a real calendar datetime `YYYY-MM-DD hh:mm:ss`"
            + (f", inclusive bounds {f.after} .. {f.before}" if f.after or f.before else ""),
        }
        if f.after:
            s["x-after"] = f.after
        if f.before:
            s["x-before"] = f.before
    elif f.kind == "ref":
        s = {"type": "string", "pattern": ID_PATTERN, "description": f"the id of a stored {f.target} ([reference])"}
    else:
        s = {
            "type": "array",
            "items": {"type": "string", "pattern": ID_PATTERN},
            "description": f"ids of stored {f.target} entities ([reference-list])",
        }
    return s


def _request_field(state: State, f: Field) -> dict[str, Any]:
    s = _value_schema(state, f, bounded=True)
    if f.nullable and f.kind != "ref_list":
        s = _nullable(s)
    if f.has_default:
        s["default"] = f.default
    elif f.kind == "ref_list":
        s["default"] = []
    return s


def _response_field(state: State, f: Field, written: bool) -> dict[str, Any]:
    s = _value_schema(state, f, bounded=not written)
    if f.kind == "ref_list":
        return s
    # [omitted]: an optional field without a default that a POST left out is stored and returned as null.
    if f.nullable or (not f.required and not f.has_default):
        s = _nullable(s)
    return s


def _effect_targets(state: State) -> set[tuple[str, str]]:
    """(entity, field) pairs some action effect writes; [effects] stores results even outside the bounds."""
    out: set[tuple[str, str]] = set()

    def add(entity: Entity, x: Effect) -> None:
        if isinstance(x, OnReference | ForEach):
            link = entity.field(x.ref_field if isinstance(x, OnReference) else x.list_field)
            target = state.entity(link.target or "") if link else None
            if target is not None:
                out.add((target.name, x.effect.field))
        else:
            out.add((entity.name, x.field))

    for a in state.actions:
        owner = state.entity(a.entity)
        if owner is not None:
            for x in a.effects:
                add(owner, x)
    return out


def _schemas(state: State, e: Entity, written: set[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """The entity as returned, its POST body and its PATCH body."""
    out_props: dict[str, Any] = {"id": {"type": "string"}}
    out_props.update({f.name: _response_field(state, f, (e.name, f.name) in written) for f in e.fields})
    create_props: dict[str, Any] = {
        "id": {"type": "string", "pattern": ID_PATTERN, "description": "chosen by the client ([client-id])"}
    }
    create_props.update({f.name: _request_field(state, f) for f in e.fields})
    patch_props: dict[str, Any] = {
        "id": {"type": "string", "description": "must equal the id in the path ([patch-id])"}
    }
    patch_props.update({f.name: _request_field(state, f) for f in e.fields})
    for p in patch_props.values():
        p.pop("default", None)  # [update]: a PATCH changes only the fields it holds; nothing is defaulted
    return {
        e.name: {
            "type": "object",
            "properties": out_props,
            "required": list(out_props),
            "description": f"a stored {e.name} ([json])",
        },
        f"{e.name}Create": {
            "type": "object",
            "properties": create_props,
            "required": ["id", *(f.name for f in e.fields if f.required and not f.has_default)],
        },
        f"{e.name}Update": {
            "type": "object",
            "properties": patch_props,
            "description": "any subset of the fields, each validated as in a POST ([update])",
        },
    }


def _json(ref: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": ref}}}}


def _id_param() -> list[dict[str, Any]]:
    return [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]


def _links(e: Entity, state: State) -> dict[str, Any]:
    by_id = {"id": "$response.body#/id"}
    links = {
        f"Get{e.name}": {"operationId": f"get{e.name}", "parameters": by_id},
        f"Update{e.name}": {"operationId": f"update{e.name}", "parameters": by_id},
        f"Delete{e.name}": {"operationId": f"delete{e.name}", "parameters": by_id},
    }
    for a in state.actions:
        if a.entity == e.name:
            links[f"{a.name}{e.name}"] = {"operationId": _action_op(a), "parameters": by_id}
    return links


def _action_op(a: Action) -> str:
    return f"{a.name}{a.entity}"


def _analytics_result(state: State, a: Analytics) -> dict[str, Any]:
    """[analytics]: count is an integer; sum is never null; avg, min and max are null without values."""
    if a.op == "count":
        return {"type": "integer", "minimum": 0}
    owner = state.entity(a.entity)
    f = owner.field(a.field or "") if owner else None
    integer = f is not None and f.kind == "integer"
    if a.op == "sum":
        return {"type": "integer" if integer else "number"}
    if a.op == "avg":
        return {"type": ["number", "null"]}
    return {"type": ["integer" if integer else "number", "null"]}


def _entity_paths(state: State, e: Entity) -> dict[str, Any]:
    ref = f"#/components/schemas/{e.name}"
    created = {**_json(ref, f"the created {e.name} as stored, defaults applied ([create])"), "links": _links(e, state)}
    rejected = _err(_REJECTED)
    return {
        f"/{e.endpoint}": {
            "get": {
                "operationId": f"list{e.name}",
                "summary": f"list every {e.name} ([list])",
                "responses": {
                    "200": {
                        "description": f"every stored {e.name}",
                        "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": ref}}}},
                    }
                },
            },
            "post": {
                "operationId": f"create{e.name}",
                "summary": f"create a {e.name} ([create])",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{e.name}Create"}}},
                },
                "responses": {
                    "200": created,
                    "201": created,
                    "400": rejected,
                    "422": rejected,
                    "409": _err("the id is already used ([client-id])"),
                },
            },
        },
        f"/{e.endpoint}/{{id}}": {
            "parameters": _id_param(),
            "get": {
                "operationId": f"get{e.name}",
                "summary": f"read a {e.name} ([read])",
                "responses": {"200": _json(ref, f"the stored {e.name}"), "404": _NOT_FOUND},
            },
            "patch": {
                "operationId": f"update{e.name}",
                "summary": f"update some fields of a {e.name} ([update])",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{e.name}Update"}}},
                },
                "responses": {
                    "200": _json(ref, f"the updated {e.name}"),
                    "404": _NOT_FOUND,
                    "400": _err(f"{_REJECTED}, [patch-id]; nothing changed"),
                    "422": _err(f"{_REJECTED}, [patch-id]; nothing changed"),
                },
            },
            "delete": {
                "operationId": f"delete{e.name}",
                "summary": f"delete a {e.name}; references to it become null or leave their lists "
                "([delete], [cascade])",
                "responses": {"200": _err("deleted"), "204": _err("deleted"), "404": _NOT_FOUND},
            },
        },
    }


def _action_path(state: State, act: Action) -> dict[str, Any]:
    owner = state.entity(act.entity)
    assert owner is not None
    return {
        "post": {
            "operationId": _action_op(act),
            "summary": f"move {act.field} from {', '.join(act.sources)} to {act.target} ([actions])",
            "parameters": _id_param(),
            "responses": {
                "200": _json(
                    f"#/components/schemas/{owner.name}",
                    f"the {owner.name} after the effects, {act.field} = {act.target}",
                ),
                "404": _err(f"no {owner.name} with this id"),
                "400": _err(f"wrong state: {act.field} is not one of {', '.join(act.sources)}"),
                "409": _err("a guard condition does not hold ([guards])"),
            },
        }
    }


def openapi(state: State, title: str = "StaminaBench API") -> dict[str, Any]:
    """The OpenAPI 3.1 document of `state`."""
    reset = {"type": "object", "properties": {"status": {"const": "reset"}}, "required": ["status"]}
    paths: dict[str, Any] = {
        "/reset": {
            "post": {
                "operationId": "reset",
                "summary": "delete every entity of every type ([reset])",
                "responses": {
                    "200": {"description": "reset", "content": {"application/json": {"schema": reset}}},
                    "204": {"description": "reset"},
                },
            }
        }
    }
    schemas: dict[str, Any] = {}
    written = _effect_targets(state)
    for e in state.entities:
        schemas.update(_schemas(state, e, written))
        paths.update(_entity_paths(state, e))
    for a in state.analytics:
        result = {"type": "object", "properties": {"result": _analytics_result(state, a)}, "required": ["result"]}
        label = "count" if a.op == "count" else f"{a.op} of {a.field}"
        paths[a.path()] = {
            "get": {
                "operationId": f"{a.op}{a.entity}{a.field or ''}",
                "summary": f"{label} over every {a.entity} ([analytics])",
                "responses": {
                    "200": {"description": "the aggregate", "content": {"application/json": {"schema": result}}}
                },
            }
        }
    for act in state.actions:
        owner = state.entity(act.entity)
        assert owner is not None
        paths[f"/{owner.endpoint}/{{id}}/{act.name}"] = _action_path(state, act)
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": "1"},
        "paths": paths,
        "components": {"schemas": schemas},
    }
