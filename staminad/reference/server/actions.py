"""Actions and analytics: an action's state check, guards and effects, and the analytics computations.

`Actions` is the part of `App` that answers `POST /<entity>/<id>/<action>` and `GET /analytics/...`, with the
mutants' wrong readings of nulls, empty lists, guards and effects switched on by name.
"""

from __future__ import annotations

from typing import Any

from .validation import Reject, is_int, is_num

_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
_CMP = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


class Actions:
    """Guards, effects and computations over the store; `App` supplies the state they read."""

    bugs: set[str]
    entities: dict[str, dict[str, Any]]
    analytics: dict[tuple[str, str | None, str], dict[str, Any]]
    data: dict[str, dict[str, dict[str, Any]]]

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
            if "avg-floor" in self.bugs and all(is_int(v) for v in values):
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
            ids = obj.get(op["list_field"]) or []
            return len(set(ids)) if "count-distinct" in self.bugs else len(ids)
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
        op = c["op"]
        if c["left"]["type"] == "field" and "guard-at-literal-fails" in self.bugs:
            op = {">=": ">", "<=": "<"}.get(op, op)  # off by the boundary
        if c["left"]["type"] == "field" and "guard-at-literal-holds" in self.bugs:
            op = {">": ">=", "<": "<="}.get(op, op)
        return self._cmp(left, op, c["value"])

    def _store(self, entity: dict[str, Any], obj: dict[str, Any], name: str, value: Any) -> None:
        """An effect's result; stored even outside the field's bounds."""
        if "effects-clamped" in self.bugs and is_num(value):
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
            if "for-each-distinct" in self.bugs:
                refs = list(dict.fromkeys(refs))  # one UPDATE ... WHERE id IN (...)
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
