"""The server's logic without sockets: routing, and the store's create, read, update, delete and reset.

`App` takes the design as plain schema JSON (with the mutant's bug names and an old endpoint's aliases),
routes each request and keeps the store; it gets its checks of values from `Validation` and its actions and
analytics from `Actions`.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from .actions import Actions
from .validation import Reject, Validation


class App(Validation, Actions):
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

    # --- create, update, delete ---------------------------------------------------------------

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

    def _patch_rules(self, f: dict[str, Any]) -> dict[str, Any]:
        """The field as a PATCH validates it; the mutant's PATCH model still has the bounds from before a change."""
        if "patch-stale-bounds" not in self.bugs or "patch_bounds" not in f:
            return f
        keys = ("minimum", "maximum", "min_length", "max_length", "after", "before")
        return {**{k: v for k, v in f.items() if k not in keys}, **f["patch_bounds"]}

    def _update(self, entity: dict[str, Any], obj: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if "id" in body and (body["id"] != obj["id"] or "patch-rejects-id" in self.bugs):
            raise Reject(400, "id cannot be changed")
        fields = {f["name"]: f for f in entity["fields"]}
        if "empty-patch-rejected" in self.bugs and not any(k in fields for k in body):
            raise Reject(400, "no fields to update")
        self._removed(entity, body)
        if "patch-no-validation" in self.bugs:
            obj.update({k: v for k, v in body.items() if k in fields})
        elif "patch-not-atomic" in self.bugs:  # validates and writes one key at a time, in body order
            for k, v in body.items():
                if k in fields:
                    obj[k] = self._value(fields[k], v)
        else:
            changes = {
                name: self._value(self._patch_rules(f), body[name]) for name, f in fields.items() if name in body
            }
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
                    elif hit and "cascade-drops-one" in self.bugs:
                        obj[f["name"]].remove(oid)  # list.remove: the first occurrence only
                    elif hit:
                        obj[f["name"]] = [i for i in obj[f["name"]] if i != oid]


def _endpoint(name: str, snake: bool) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() if snake else name.lower()
