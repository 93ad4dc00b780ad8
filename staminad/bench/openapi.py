"""An OpenAPI 3.1 document for a state, so standard API tooling can be pointed at any agent's server."""

from __future__ import annotations

from typing import Any

from staminad.bench.schema import Entity, Field, State

_ERR = {"description": "rejected input (400 or 422)"}


def _field_schema(state: State, f: Field) -> dict[str, Any]:
    s: dict[str, Any]
    if f.kind == "string":
        s = {"type": "string"}
        if f.min_length is not None:
            s["minLength"] = f.min_length
        if f.max_length is not None:
            s["maxLength"] = f.max_length
    elif f.kind in ("integer", "float"):
        s = {"type": "integer" if f.kind == "integer" else "number"}
        if f.minimum is not None:
            s["minimum"] = f.minimum
        if f.maximum is not None:
            s["maximum"] = f.maximum
    elif f.kind == "boolean":
        s = {"type": "boolean"}
    elif f.kind == "enum":
        en = state.enum(f.enum or "")
        s = {"type": "string", "enum": list(en.values) if en else []}
    elif f.kind == "datetime":
        s = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$"}
    elif f.kind == "ref":
        s = {"type": "string", "description": f"id of a {f.target}"}
    else:
        s = {"type": "array", "items": {"type": "string"}, "description": f"ids of {f.target} entities",
             "default": []}
    if f.has_default:
        s["default"] = f.default
    if f.nullable:
        s = {"oneOf": [s, {"type": "null"}]}
    return s


def _entity_schema(state: State, e: Entity) -> dict[str, Any]:
    props: dict[str, Any] = {"id": {"type": "string"}}
    props.update({f.name: _field_schema(state, f) for f in e.fields})
    required = ["id", *(f.name for f in e.fields if f.required and not f.has_default)]
    return {"type": "object", "properties": props, "required": required}


def _json(ref: str) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": {"$ref": ref}}}}


def openapi(state: State, title: str = "StaminaBench API") -> dict[str, Any]:
    paths: dict[str, Any] = {"/reset": {"post": {"summary": "delete every entity", "responses": {
        "200": {"description": "reset"}, "204": {"description": "reset"}}}}}
    schemas: dict[str, Any] = {}
    for e in state.entities:
        ref = f"#/components/schemas/{e.name}"
        schemas[e.name] = _entity_schema(state, e)
        one = {"description": f"one {e.name}", **_json(ref)}
        id_param = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]
        paths[f"/{e.endpoint}"] = {
            "get": {"summary": f"list {e.name}", "responses": {"200": {
                "description": "all entities",
                "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": ref}}}}}}},
            "post": {"summary": f"create a {e.name}", "requestBody": {"required": True, **_json(ref)},
                     "responses": {"200": one, "201": one, "400": _ERR, "409": {"description": "duplicate id"},
                                   "422": _ERR}},
        }
        paths[f"/{e.endpoint}/{{id}}"] = {
            "parameters": id_param,
            "get": {"responses": {"200": one, "404": {"description": "not found"}}},
            "patch": {"requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object"}}}}, "responses": {"200": one, "400": _ERR, "404": {"description": "not found"},
                                                    "422": _ERR}},
            "delete": {"responses": {"200": {"description": "deleted"}, "204": {"description": "deleted"},
                                     "404": {"description": "not found"}}},
        }
    for a in state.analytics:
        paths[a.path()] = {"get": {"summary": f"{a.op} over {a.entity}", "responses": {"200": {
            "description": "aggregate", "content": {"application/json": {"schema": {
                "type": "object", "properties": {"result": {"type": ["number", "null"]}}}}}}}}}
    for act in state.actions:
        owner = state.entity(act.entity)
        assert owner is not None
        paths[f"/{owner.endpoint}/{{id}}/{act.name}"] = {"post": {
            "summary": f"move {act.field} from {', '.join(act.sources)} to {act.target}",
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "done", **_json(f"#/components/schemas/{owner.name}")},
                          "400": {"description": "wrong state"}, "404": {"description": "not found"},
                          "409": {"description": "a guard does not hold"}}}}
    return {"openapi": "3.1.0", "info": {"title": title, "version": "1"}, "paths": paths,
            "components": {"schemas": schemas}}
