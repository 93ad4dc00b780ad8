"""The reference REST server: implements every README rule for a design given as schema JSON.

Standard library only, and a single file, because the reference agent copies it into sandboxes
where nothing else is installed. It is written independently of `staminad.bench` (it reads the
schema as plain JSON) so that it and the suite are two separate readings of the same rules: the
oracle agreeing with the suite is evidence both are right. Mutants are this server with one
named bug switched on (`--bug`).

Run: python3 server.py --config config.json --port 8000
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_BODY = 1 << 20
_DT = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")
SERVER_BUGS = frozenset(
    {
        "accept-null",
        "default-required",
        "no-cascade",
        "old-endpoint-alive",
        "rounded-avg",
        "zero-for-empty",
        "wrong-state-422",
        "swap-400-409",
        "no-ref-effects",
        "500-on-wrong-type",
        "case-insensitive-enums",
        "exclusive-bounds",
        "invalid-calendar",
        "patch-rejects-id",
    }
) | frozenset(
    {  # crud, validation, types, removals
        "drop-null-keys",
        "optional-required",
        "required-not-enforced",
        "null-means-default",
        "create-echoes-body",
        "malformed-json-500",
        "non-object-body-500",
        "integral-float-rejected",
        "bool-is-number",
        "numeric-strings",
        "integer-accepts-fraction",
        "length-bytes",
        "leap-day-always",
        "hour-24",
        "iso-format-accepted",
        "zero-bound-ignored",
        "enum-any-string",
        "patch-no-validation",
        "patch-not-atomic",
        "patch-upserts",
        "duplicate-overwrites",
        "missing-id-generated",
        "numeric-id-accepted",
        "loose-ids",
        "list-envelope",
        "read-missing-null",
        "delete-unknown-ok",
        "soft-delete-listed",
        "reset-noop",
        "no-cascade-single",
        "no-cascade-list",
        "cascade-deletes-referrers",
        "unchecked-reference",
        "unchecked-reference-list",
        "ref-list-null-accepted",
        "snake-endpoints",
        "stores-unknown-keys",
    }
)
# Ids need no percent-encoding in a path: RFC 3986 unreserved characters only, at least one.
_ID = re.compile(r"^[A-Za-z0-9._~-]+$")


class Reject(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class App:
    """The server's logic without sockets: `handle(method, path, body)` -> (status, JSON value)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.schema = config["schema"]
        self.bugs = set(config.get("bugs", ()))
        self.aliases: dict[str, str] = dict(config.get("aliases", {})) if "old-endpoint-alive" in self.bugs else {}
        self.entities = {e["name"]: e for e in self.schema.get("entities", [])}
        self.by_endpoint = {_endpoint(name, "snake-endpoints" in self.bugs): e for name, e in self.entities.items()}
        for old, name in self.aliases.items():
            if name in self.entities and old not in self.by_endpoint:
                self.by_endpoint[old] = self.entities[name]
        self.enums = {e["name"]: e["values"] for e in self.schema.get("enums", [])}
        self.actions = {(a["entity"], a["name"]): a for a in self.schema.get("actions", [])}
        self.analytics = {}
        for a in self.schema.get("analytics", []):
            key = (a["entity"].lower(), a.get("field"), a["op"])
            self.analytics[key] = a
        self.data: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in self.entities}
        self.deleted: set[tuple[str, str]] = set()  # soft-deleted (entity, id), only under "soft-delete-listed"
        self.lock = threading.Lock()

    # --- routing ------------------------------------------------------------------------------

    def handle(self, method: str, path: str, raw: bytes) -> tuple[int, Any]:
        with self.lock:
            try:
                return self._route(method, path.split("?", 1)[0], raw)
            except Reject as r:
                return r.status, {"error": str(r)}
            except Exception as exc:  # noqa: BLE001 - a mutant's deliberate crash, or a real bug: 500, keep serving
                return 500, {"error": f"{type(exc).__name__}: {exc}"}

    def _route(self, method: str, path: str, raw: bytes) -> tuple[int, Any]:  # noqa: C901 - one branch per route kind of the reference server
        parts = [p for p in path.split("/") if p]
        if parts == ["reset"] and method == "POST":
            if "reset-noop" not in self.bugs:  # the mutant rebinds a local instead of clearing the store
                for table in self.data.values():
                    table.clear()
                self.deleted.clear()
            return 200, {"status": "reset"}
        if parts and parts[0] == "analytics" and method == "GET":
            return self._analytics(parts[1:])
        if not parts or parts[0] not in self.by_endpoint:
            raise Reject(404, "not found")
        entity = self.by_endpoint[parts[0]]
        if len(parts) == 1 and method == "GET":
            items = [self._out(o) for o in self.data[entity["name"]].values()]
            return 200, {"items": items} if "list-envelope" in self.bugs else items
        if len(parts) == 1 and method == "POST":
            body = self._json(raw)
            created = self._create(entity, body)
            return 201, self._out(dict(body) if "create-echoes-body" in self.bugs else created)
        if len(parts) == 2:
            table = self.data[entity["name"]]
            obj = None if (entity["name"], parts[1]) in self.deleted else table.get(parts[1])
            if method not in ("GET", "PATCH", "DELETE"):
                raise Reject(405, "method not allowed")
            if obj is None and method == "GET" and "read-missing-null" in self.bugs:
                return 200, None
            if obj is None and method == "PATCH" and "patch-upserts" in self.bugs:
                return 200, self._out(self._create(entity, {**self._json(raw), "id": parts[1]}))
            if obj is None and method == "DELETE" and "delete-unknown-ok" in self.bugs:
                return 200, {"deleted": parts[1]}  # "idempotent" delete
            if obj is None:
                raise Reject(404, f"{entity['name']} {parts[1]} not found")
            if method == "GET":
                return 200, self._out(obj)
            if method == "PATCH":
                return 200, self._out(self._update(entity, obj, self._json(raw)))
            self._delete(entity, parts[1])
            return 200, {"deleted": parts[1]}
        if len(parts) == 3 and method == "POST":
            action = self.actions.get((entity["name"], parts[2]))
            if action is None:
                raise Reject(404, "no such action")
            return self._act(entity, action, parts[1])
        raise Reject(404, "not found")

    def _out(self, obj: dict[str, Any]) -> dict[str, Any]:
        """An entity as returned; the mutant serializes with "exclude none" and drops null keys."""
        if "drop-null-keys" in self.bugs:
            return {k: v for k, v in obj.items() if v is not None}
        return obj

    def _json(self, raw: bytes) -> Any:
        def no_constants(name: str) -> Any:
            raise ValueError(f"{name} is not valid JSON")

        if "malformed-json-500" in self.bugs:  # parses without a try: the parser's error escapes as a 500
            body = json.loads(raw.decode("utf-8") or "null", parse_constant=no_constants)
        else:
            try:
                body = json.loads(raw.decode("utf-8") or "null", parse_constant=no_constants)
            except (ValueError, UnicodeDecodeError):
                raise Reject(400, "body is not valid JSON") from None
        if not isinstance(body, dict) and "non-object-body-500" not in self.bugs:  # the mutant calls .get on it
            raise Reject(400, "body must be a JSON object")
        return body

    # --- validation ---------------------------------------------------------------------------

    def _valid_date(self, v: Any) -> bool:
        if "iso-format-accepted" in self.bugs and isinstance(v, str):
            try:  # the mutant parses with fromisoformat, which also takes `T`, no seconds, offsets...
                dt.datetime.fromisoformat(v)
            except ValueError:
                return False
            return True
        if not isinstance(v, str) or not _DT.match(v):
            return False
        if "invalid-calendar" in self.bugs:
            return True
        if "leap-day-always" in self.bugs or "hour-24" in self.bugs:
            return _hand_checked_date(v, "leap-day-always" in self.bugs, "hour-24" in self.bugs)
        try:
            dt.datetime.strptime(v, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return False
        return True

    def _in_range(self, v: Any, lo: Any, hi: Any) -> bool:
        if "exclusive-bounds" in self.bugs:
            return (lo is None or v > lo) and (hi is None or v < hi)
        if "zero-bound-ignored" in self.bugs:  # `if minimum and v < minimum`: a bound of 0 is falsy
            return (not lo or v >= lo) and (not hi or v <= hi)
        return (lo is None or v >= lo) and (hi is None or v <= hi)

    def _check(self, f: dict[str, Any], v: Any) -> Any:  # noqa: C901 - one branch per rule, each with its own one-line message
        """Validate one non-null value for field `f`; returns the value to store."""
        kind, name = f["kind"], f["name"]
        bad = Reject(400, f"{name}: invalid value {v!r}")
        if kind == "string":
            if not isinstance(v, str):
                raise bad
            n = len(v.encode("utf-8")) if "length-bytes" in self.bugs else len(v)
            if not (
                (f.get("min_length") is None or n >= f["min_length"])
                and (f.get("max_length") is None or n <= f["max_length"])
            ):
                raise bad
        elif kind in ("integer", "float"):
            v = self._number(kind, v)
            if v is None:
                raise bad
            if not self._in_range(v, f.get("minimum"), f.get("maximum")):
                raise bad
        elif kind == "boolean":
            if not isinstance(v, bool):
                raise bad
        elif kind == "enum":
            values = self.enums.get(f.get("enum", ""), [])
            if "enum-any-string" in self.bugs and isinstance(v, str):
                return v
            if "case-insensitive-enums" in self.bugs and isinstance(v, str):
                match = [x for x in values if x.lower() == v.lower()]
                if match:
                    return match[0]
            if not isinstance(v, str) or v not in values:
                raise bad
        elif kind == "datetime":
            if not self._valid_date(v) or not self._in_range(v, f.get("after"), f.get("before")):
                raise bad
        elif kind == "ref":
            if not isinstance(v, str):  # before the lookup: a list or object is no key of the store
                raise bad
            if "unchecked-reference" not in self.bugs and v not in self.data.get(f["target"], {}):
                raise bad
        elif kind == "ref_list":
            table = self.data.get(f["target"], {})
            unchecked = "unchecked-reference-list" in self.bugs
            if not isinstance(v, list) or not all(isinstance(i, str) and (unchecked or i in table) for i in v):
                raise bad
            return list(v)
        return v

    def _number(self, kind: str, v: Any) -> Any:
        """The number to store for an integer or float field, or None when `v` is not one."""
        if "numeric-strings" in self.bugs and isinstance(v, str):
            try:  # the mutant coerces like int(...)/float(...) would
                v = int(v) if kind == "integer" else float(v)
            except ValueError:
                return None
        if "bool-is-number" in self.bugs and isinstance(v, bool):
            return v  # isinstance(True, int) holds in Python
        if kind == "integer":
            if "integer-accepts-fraction" in self.bugs and _is_num(v):
                return v
            return v if _is_int(v) else None
        if "integral-float-rejected" in self.bugs:
            return v if isinstance(v, float) else None
        return v if _is_num(v) else None

    def _value(self, f: dict[str, Any], v: Any) -> Any:
        if v is None:
            if "null-means-default" in self.bugs and f.get("has_default", False):
                return f.get("default")  # `body.get(name) or default`: explicit null treated as omitted
            if "ref-list-null-accepted" in self.bugs and f["kind"] == "ref_list":
                return []
            if f.get("nullable", False) or ("accept-null" in self.bugs and f["kind"] != "ref_list"):
                return None
            raise Reject(400, f"{f['name']} must not be null")
        try:
            return self._check(f, v)
        except Reject:
            if "500-on-wrong-type" in self.bugs and not self._type_ok(f, v):
                raise RuntimeError(f"crashed on {f['name']}") from None
            raise

    @staticmethod
    def _type_ok(f: dict[str, Any], v: Any) -> bool:
        checks: dict[str, Any] = {
            "string": lambda x: isinstance(x, str),
            "integer": _is_int,
            "float": _is_num,
            "boolean": lambda x: isinstance(x, bool),
            "enum": lambda x: isinstance(x, str),
            "datetime": lambda x: isinstance(x, str),
            "ref": lambda x: isinstance(x, str),
            "ref_list": lambda x: isinstance(x, list) and all(isinstance(i, str) for i in x),
        }
        return bool(checks[f["kind"]](v))

    def _id(self, body: dict[str, Any], table: dict[str, Any]) -> str:
        oid = body.get("id")
        if oid is None and "missing-id-generated" in self.bugs:
            oid = f"gen-{len(table) + 1}"
        if "numeric-id-accepted" in self.bugs and _is_num(oid):
            oid = str(oid)
        if not isinstance(oid, str):
            raise Reject(400, "id must be a string chosen by the client")
        if "loose-ids" not in self.bugs and not _ID.match(oid):
            raise Reject(400, "id must be non-empty and use only letters, digits, '-', '_', '.' and '~'")
        return oid

    def _create(self, entity: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        table = self.data[entity["name"]]
        oid = self._id(body, table)
        if oid in table and "duplicate-overwrites" not in self.bugs:
            raise Reject(409, f"id {oid} already exists")
        obj: dict[str, Any] = {"id": oid}
        self._removed(entity, body)
        for f in entity["fields"]:
            name = f["name"]
            if name in body:
                obj[name] = self._value(f, body[name])
            elif f.get("has_default", False) and "default-required" not in self.bugs:
                obj[name] = f.get("default")
            elif f.get("required", False) and "required-not-enforced" not in self.bugs:
                raise Reject(400, f"{name} is required")
            elif "optional-required" in self.bugs and not f.get("nullable", False) and f["kind"] != "ref_list":
                raise Reject(400, f"{name} must not be null")  # the mutant's model types it `T`, not `T | None`
            else:
                obj[name] = [] if f["kind"] == "ref_list" else None
        if "stores-unknown-keys" in self.bugs:  # `{**body, ...}`: every key the client sent is kept
            obj = {**body, **obj}
        table[oid] = obj
        self.deleted.discard((entity["name"], oid))
        return obj

    def _removed(self, entity: dict[str, Any], body: dict[str, Any]) -> None:
        """The mutant's request model still has the fields it took out of its replies: it validates their keys."""
        live = {f["name"] for f in entity["fields"]}
        for f in entity.get("removed", ()):
            if f["name"] in body and f["name"] not in live:
                self._value(f, body[f["name"]])

    def _update(self, entity: dict[str, Any], obj: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if "id" in body and (body["id"] != obj["id"] or "patch-rejects-id" in self.bugs):
            raise Reject(400, "id cannot be changed")
        fields = {f["name"]: f for f in entity["fields"]}
        self._removed(entity, body)
        if "patch-no-validation" in self.bugs:
            obj.update({k: v for k, v in body.items() if k in fields})
        elif "patch-not-atomic" in self.bugs:  # validates and writes one key at a time, in body order
            for k, v in body.items():
                if k in fields:
                    obj[k] = self._value(fields[k], v)
        else:
            changes = {name: self._value(f, body[name]) for name, f in fields.items() if name in body}
            obj.update(changes)
        return obj

    def _delete(self, entity: dict[str, Any], oid: str) -> None:
        if "soft-delete-listed" in self.bugs:
            self.deleted.add((entity["name"], oid))  # a `deleted` flag the list handler forgets to filter
        else:
            del self.data[entity["name"]][oid]
        if "no-cascade" in self.bugs:
            return
        for other in self.entities.values():
            for f in other["fields"]:
                if f.get("target") != entity["name"]:
                    continue
                if f["kind"] == (
                    "ref"
                    if "no-cascade-single" in self.bugs
                    else "ref_list"
                    if "no-cascade-list" in self.bugs
                    else None
                ):
                    continue
                table = self.data[other["name"]]
                for key, obj in list(table.items()):
                    hit = obj.get(f["name"]) == oid if f["kind"] == "ref" else oid in (obj.get(f["name"]) or [])
                    if hit and "cascade-deletes-referrers" in self.bugs:  # ON DELETE CASCADE
                        del table[key]
                    elif hit and f["kind"] == "ref":
                        obj[f["name"]] = None
                    elif hit:
                        obj[f["name"]] = [i for i in obj[f["name"]] if i != oid]

    # --- analytics and actions ----------------------------------------------------------------

    def _analytics(self, parts: list[str]) -> tuple[int, Any]:
        if len(parts) == 2 and parts[1] == "count":
            key: tuple[str, str | None, str] = (parts[0], None, "count")
        elif len(parts) == 3:
            key = (parts[0], parts[1], parts[2])
        else:
            raise Reject(404, "not found")
        a = self.analytics.get(key)
        if a is None:
            raise Reject(404, "no such analytics endpoint")
        objs = list(self.data.get(a["entity"], {}).values())
        if a["op"] == "count":
            return 200, {"result": None if not objs and "count-empty-null" in self.bugs else len(objs)}
        if "null-as-zero" in self.bugs:
            values = [o.get(a["field"]) or 0 for o in objs]
        else:
            values = [o[a["field"]] for o in objs if o.get(a["field"]) is not None]
        if "int-as-float" in self.bugs and values:
            values = [float(v) for v in values]
        if a["op"] == "sum":
            return 200, {"result": None if not values and "sum-empty-null" in self.bugs else sum(values)}
        if not values and objs and "all-null-crash" in self.bugs:  # checks for rows, not for values
            return 200, {"result": sum(values) / len(values) if a["op"] == "avg" else min(values)}
        if not values:
            return 200, {"result": 0 if "zero-for-empty" in self.bugs else None}
        if a["op"] == "avg":
            if "avg-floor" in self.bugs and all(_is_int(v) for v in values):
                return 200, {"result": sum(values) // len(values)}
            avg = sum(values) / len(values)
            return 200, {"result": round(avg, 2) if "rounded-avg" in self.bugs else avg}
        return 200, {"result": min(values) if a["op"] == "min" else max(values)}

    def _target(self, entity: dict[str, Any], link: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        f = next(x for x in entity["fields"] if x["name"] == link)
        return self.entities[f["target"]], self.data[f["target"]]

    def _operand(self, entity: dict[str, Any], obj: dict[str, Any], op: dict[str, Any]) -> Any:
        t = op["type"]
        if t == "field":
            return obj.get(op["field"])
        if t == "arith":
            a, b = obj.get(op["left"]), obj.get(op["right"])
            return None if a is None or b is None else _ARITH[op["op"]](a, b)
        if t == "count":
            return len(obj.get(op["list_field"]) or [])
        table = self._target(entity, op["list_field"])[1]
        vals = [table[i].get(op["field"]) for i in obj.get(op["list_field"]) or [] if i in table]
        if "guard-sum-empty-null" in self.bugs and all(v is None for v in vals):
            return None  # SQL's SUM: null over no values
        return sum(v for v in vals if v is not None)

    def _cmp(self, a: Any, op: str, b: Any) -> bool:
        if a is None and op == "!=" and "null-ne-holds" in self.bugs:
            return True  # a plain `!=`: null differs from every literal
        if a is None and op in ("<", "<=", ">", ">=") and "null-as-zero-order" in self.bugs:
            a = 0  # as JavaScript's relational operators read null
        return a is not None and b is not None and bool(_CMP[op](a, b))

    def _holds(self, entity: dict[str, Any], obj: dict[str, Any], c: dict[str, Any]) -> bool:
        if c["type"] == "null":
            if "null-check-falsy" in self.bugs:
                return (not obj.get(c["field"])) == bool(c["is_null"])  # `if (!this.x)`
            return (obj.get(c["field"]) is None) == bool(c["is_null"])
        if c["type"] == "quantified":
            table = self._target(entity, c["list_field"])[1]
            items = [table[i] for i in obj.get(c["list_field"]) or [] if i in table]
            if "all-skips-null-items" in self.bugs:  # filters nulls out first, as a query's WHERE f IS NOT NULL
                items = [o for o in items if o.get(c["field"]) is not None]
            res = [self._cmp(o.get(c["field"]), c["op"], c["value"]) for o in items]
            if c["quantifier"] == "any":
                return (not res and "any-empty-holds" in self.bugs) or any(res)
            return (bool(res) or "all-empty-fails" not in self.bugs) and all(res)
        left = self._operand(entity, obj, c["left"])
        if left is None and "null-guard-skipped" in self.bugs:
            return True  # nothing to compare, so nothing to forbid
        return self._cmp(left, c["op"], c["value"])

    def _store(self, entity: dict[str, Any], obj: dict[str, Any], name: str, value: Any) -> None:
        """An effect's result; stored even outside the field's bounds."""
        if "effects-clamped" in self.bugs and _is_num(value):
            f = next(x for x in entity["fields"] if x["name"] == name)
            lo, hi = f.get("minimum"), f.get("maximum")
            value = max(value, lo) if lo is not None else value
            value = min(value, hi) if hi is not None else value
        obj[name] = value

    def _simple(self, entity: dict[str, Any], obj: dict[str, Any], x: dict[str, Any]) -> None:
        if x["type"] == "set":
            if obj.get(x["field"]) is not None or "set-skips-null" not in self.bugs:  # the null rule applied to sets
                obj[x["field"]] = x.get("value")
        elif obj.get(x["field"]) is not None:
            self._store(entity, obj, x["field"], obj[x["field"]] + x["amount"])
        elif "increase-null-as-zero" in self.bugs:
            self._store(entity, obj, x["field"], x["amount"])

    def _effect(self, entity: dict[str, Any], obj: dict[str, Any], x: dict[str, Any]) -> None:
        t = x["type"]
        if t in ("set", "increment"):
            self._simple(entity, obj, x)
        elif t == "compute":
            a, b = obj.get(x["left"]), obj.get(x["right"])
            if "compute-null-as-zero" in self.bugs and (a is None or b is None):
                self._store(entity, obj, x["field"], _ARITH[x["op"]](a or 0, b or 0))  # as JavaScript reads null
            elif a is not None and b is not None:
                self._store(entity, obj, x["field"], _ARITH[x["op"]](a, b))
            elif "compute-null-writes-null" in self.bugs:
                obj[x["field"]] = None
        elif "no-ref-effects" in self.bugs:
            return
        elif t == "on_ref":
            target, table = self._target(entity, x["ref_field"])
            ref = obj.get(x["ref_field"])
            if "on-ref-null-crash" in self.bugs:
                self._simple(target, table[obj[x["ref_field"]]], x["effect"])  # KeyError on a null reference
            elif ref in table:
                self._simple(target, table[ref], x["effect"])
        elif t == "for_each":
            target, table = self._target(entity, x["list_field"])
            refs = obj.get(x["list_field"]) or []
            if not refs and "for-each-empty-500" in self.bugs:
                raise RuntimeError("syntax error near ')': WHERE id IN ()")  # the query built for no ids
            for ref in refs[:1] if "for-each-first-only" in self.bugs else refs:
                if ref in table:
                    self._simple(target, table[ref], x["effect"])

    def _act(self, entity: dict[str, Any], action: dict[str, Any], oid: str) -> tuple[int, Any]:
        obj = self.data[entity["name"]].get(oid)
        if obj is None:
            if "unknown-id-400" not in self.bugs:
                raise Reject(404, f"{entity['name']} {oid} not found")
            obj = {}  # falls through to the state check, which a missing entity fails
        swap = "swap-400-409" in self.bugs
        guards = action.get("conditions", [])
        if "first-guard-only" in self.bugs:
            guards = guards[:1]
        guards_hold = "guards-before-state" not in self.bugs or all(self._holds(entity, obj, c) for c in guards)
        if not guards_hold:
            raise Reject(409, "a guard condition does not hold")
        if obj.get(action["field"]) not in action["sources"]:
            raise Reject(409 if swap else 422 if "wrong-state-422" in self.bugs else 400, "wrong state")
        if not all(self._holds(entity, obj, c) for c in guards):
            raise Reject(400 if swap else 409, "a guard condition does not hold")
        before = dict(obj)
        effects = action.get("effects", [])
        for x in reversed(effects) if "effects-reversed" in self.bugs else effects:
            self._effect(entity, obj, x)
        obj[action["field"]] = action["target"]
        return 200, before if "stale-action-body" in self.bugs else obj


def _endpoint(name: str, snake: bool) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() if snake else name.lower()


def _hand_checked_date(v: str, leap_always: bool, hour_24: bool) -> bool:
    """A mutant's hand-written calendar check: a fixed month table, or `hour <= 24`."""
    y, mo, d, h, mi, se = (int(x) for x in re.findall(r"\d+", v))
    leap = leap_always or (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0))
    days = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    return 1 <= mo <= 12 and 1 <= d <= days[mo - 1] and 0 <= h <= (24 if hour_24 else 23) and mi < 60 and se < 60


# Bugs of the action and analytics paths (see `staminad.reference.mutants`).
SERVER_BUGS = SERVER_BUGS | frozenset(
    {
        "null-guard-skipped",
        "all-skips-null-items",
        "set-skips-null",
        "compute-null-as-zero",
        "for-each-empty-500",
        "all-null-crash",
        "count-empty-null",
        "removed-field-validated",
        "null-ne-holds",
        "null-as-zero-order",
        "null-check-falsy",
        "any-empty-holds",
        "all-empty-fails",
        "first-guard-only",
        "guard-sum-empty-null",
        "increase-null-as-zero",
        "compute-null-writes-null",
        "effects-clamped",
        "on-ref-null-crash",
        "for-each-first-only",
        "effects-reversed",
        "unknown-id-400",
        "guards-before-state",
        "stale-action-body",
        "null-as-zero",
        "int-as-float",
        "sum-empty-null",
        "avg-floor",
    }
)
_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
_CMP = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without TCP_NODELAY, Nagle's algorithm and the
    # client's delayed ACK stall every keep-alive response by ~40 ms.
    disable_nagle_algorithm = True
    app: App

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._send(413, {"error": "body too large"})
            return
        raw = self.rfile.read(length) if length else b""
        status, payload = self.app.handle(self.command, self.path, raw)
        self._send(status, payload)

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve


def make_server(app: App, host: str, port: int) -> ThreadingHTTPServer:
    handler = type("Handler", (_Handler,), {"app": app})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="StaminaBench reference server")
    ap.add_argument("--config", required=True, help="JSON file: {schema, bugs, aliases}")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="0.0.0.0")
    args = ap.parse_args(argv)
    with open(args.config, encoding="utf-8") as fh:
        app = App(json.load(fh))
    serve(make_server(app, args.host, args.port))
    return 0


def serve(server: ThreadingHTTPServer) -> None:
    """Serve until interrupted, then release the port."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    sys.exit(main())
