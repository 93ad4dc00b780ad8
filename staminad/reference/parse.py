"""Reading the agent-facing texts back into schema JSON: the reference agent's comprehension.

Standard library only. The grammar is the one `staminad.bench.phrases` writes; the round-trip
property test (parse(render(s)) == s for generated states and changes) is what proves every fact
the tests rely on is in the texts.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FIELD = re.compile(
    r"^`(?P<name>\w+)`: (?P<req>required|optional), (?P<null>nullable|non-nullable) "
    r"(?P<type>string|integer|float|boolean|datetime \(YYYY-MM-DD hh:mm:ss\)|enum \w+|"
    r"reference to \w+|list of references to \w+)"
    r"(?: \((?P<bounds>[^()]*)\))?(?:, default (?P<default>.+))?$"
)
_ENUM = re.compile(r"^`(\w+)`: (.+)$")
_ANALYTICS = re.compile(
    r"^`GET /analytics/\w+/(?:(?P<field>\w+)/(?P<op>avg|min|max|sum)|count)`: "
    r"(?:\w+ of `\w+` over all|number of) (?P<entity>\w+) entities"
)
_BETWEEN = re.compile(r"^(length )?between (.+) and (.+) inclusive$")
_ONE_SIDE = re.compile(r"^(length )?at (least|most) (.+) inclusive$")
_OPS = r"(<=|>=|==|!=|<|>)"


def _kind_of(type_text: str) -> tuple[str, dict[str, Any]]:
    if type_text.startswith("enum "):
        return "enum", {"enum": type_text[5:]}
    if type_text.startswith("reference to "):
        return "ref", {"target": type_text[13:]}
    if type_text.startswith("list of references to "):
        return "ref_list", {"target": type_text[22:]}
    if type_text.startswith("datetime"):
        return "datetime", {}
    return type_text, {}


def parse_bounds(kind: str, text: str) -> dict[str, Any]:
    keys = {"string": ("min_length", "max_length"), "datetime": ("after", "before")}.get(kind, ("minimum", "maximum"))
    m = _BETWEEN.match(text)
    if m:
        return {keys[0]: json.loads(m.group(2)), keys[1]: json.loads(m.group(3))}
    m = _ONE_SIDE.match(text)
    if m:
        return {keys[0] if m.group(2) == "least" else keys[1]: json.loads(m.group(3))}
    raise ValueError(f"cannot read bounds {text!r}")


def parse_field(line: str) -> dict[str, Any]:
    m = _FIELD.match(line)
    if not m:
        raise ValueError(f"cannot read field {line!r}")
    kind, extra = _kind_of(m.group("type"))
    f: dict[str, Any] = {"name": m.group("name"), "kind": kind, **extra}
    if m.group("req") == "required":
        f["required"] = True
    if m.group("null") == "nullable":
        f["nullable"] = True
    if m.group("bounds"):
        f.update(parse_bounds(kind, m.group("bounds")))
    if m.group("default") and kind != "ref_list":
        f["has_default"] = True
        f["default"] = json.loads(m.group("default"))
    return f


def parse_enum(line: str) -> dict[str, Any]:
    m = _ENUM.match(line)
    if not m:
        raise ValueError(f"cannot read enum type {line!r}")
    return {"name": m.group(1), "values": m.group(2).split(", ")}


def parse_condition(text: str) -> dict[str, Any]:
    m = re.match(r"^this\.(\w+) is (not )?null$", text)
    if m:
        return {"type": "null", "field": m.group(1), "is_null": not m.group(2)}
    m = re.match(rf"^(any|all) of this\.(\w+) (?:has|have) (\w+) {_OPS} (.+)$", text)
    if m:
        return {
            "type": "quantified",
            "quantifier": m.group(1),
            "list_field": m.group(2),
            "field": m.group(3),
            "op": m.group(4),
            "value": json.loads(m.group(5)),
        }
    m = re.match(rf"^(.+?) {_OPS} (.+)$", text)
    if not m:
        raise ValueError(f"cannot read guard {text!r}")
    left, op, value = m.group(1), m.group(2), json.loads(m.group(3))
    if mm := re.match(r"^count\(this\.(\w+)\)$", left):
        operand: dict[str, Any] = {"type": "count", "list_field": mm.group(1)}
    elif mm := re.match(r"^sum\(this\.(\w+)\.(\w+)\)$", left):
        operand = {"type": "sum", "list_field": mm.group(1), "field": mm.group(2)}
    elif mm := re.match(r"^this\.(\w+) ([+\-*]) this\.(\w+)$", left):
        operand = {"type": "arith", "left": mm.group(1), "op": mm.group(2), "right": mm.group(3)}
    elif mm := re.match(r"^this\.(\w+)$", left):
        operand = {"type": "field", "field": mm.group(1)}
    else:
        raise ValueError(f"cannot read guard operand {left!r}")
    return {"type": "compare", "left": operand, "op": op, "value": value}


def _simple_effect(text: str) -> dict[str, Any]:
    m = re.match(r"^set (?:this\.)?(\w+) to (.+)$", text)
    if m:
        return {"type": "set", "field": m.group(1), "value": json.loads(m.group(2))}
    m = re.match(r"^(increase|decrease) (?:this\.)?(\w+) by (.+)$", text)
    if not m:
        raise ValueError(f"cannot read effect {text!r}")
    amount = json.loads(m.group(3))
    return {"type": "increment", "field": m.group(2), "amount": amount if m.group(1) == "increase" else -amount}


def parse_effect(text: str) -> dict[str, Any]:
    m = re.match(r"^on the referenced \w+ \(this\.(\w+)\): (.+)$", text)
    if m:
        return {"type": "on_ref", "ref_field": m.group(1), "effect": _simple_effect(m.group(2))}
    m = re.match(r"^for each \w+ in this\.(\w+): (.+)$", text)
    if m:
        return {"type": "for_each", "list_field": m.group(1), "effect": _simple_effect(m.group(2))}
    m = re.match(r"^set this\.(\w+) to this\.(\w+) ([+\-*]) this\.(\w+)$", text)
    if m:
        return {"type": "compute", "field": m.group(1), "left": m.group(2), "op": m.group(3), "right": m.group(4)}
    return _simple_effect(text)


def parse_action(entity: str, name: str, lines: list[str]) -> dict[str, Any]:
    """An action block: the lines after its heading (spec) or its "Add the action" line (prompt)."""
    action: dict[str, Any] = {"entity": entity, "name": name, "conditions": [], "effects": []}
    section = None
    for raw in lines:
        line = raw.strip()
        if m := re.match(r"^- Allowed when `(\w+)` is one of: (.+) \(otherwise 400\)\.$", line):
            action["field"], action["sources"] = m.group(1), m.group(2).split(", ")
        elif line.startswith("- Guards, all must hold"):
            section = "conditions"
        elif line.startswith("- Effects, in this order"):
            section = "effects"
        elif line in ("- Guards: none.", "- Effects: none."):
            section = None
        elif m := re.match(r"^- Then sets `\w+` to (\w+) and returns", line):
            action["target"] = m.group(1)
        elif line.startswith("- ") and raw.startswith("  ") and section:
            text = line[2:]
            action[section].append(parse_condition(text) if section == "conditions" else parse_effect(text))
    return action


def _sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("# "):
            current = line[2:].strip()
            out[current] = []
        else:
            out.setdefault(current, []).append(line)
    return out


def parse_spec(text: str) -> dict[str, Any]:
    """`initial_specification.md` -> schema JSON."""
    sec = _sections(text)
    schema: dict[str, Any] = {"enums": [], "entities": [], "analytics": [], "actions": []}
    schema["enums"] = [parse_enum(line[2:]) for line in sec.get("Enum types", []) if line.startswith("- ")]
    entity: dict[str, Any] | None = None
    for line in sec.get("Entities", []):
        if line.startswith("## "):
            entity = {"name": line[3:].strip(), "fields": []}
            schema["entities"].append(entity)
        elif line.startswith("- `") and entity is not None and not line.startswith("- `id`:"):
            entity["fields"].append(parse_field(line[2:]))
    for line in sec.get("Analytics endpoints", []):
        if line.startswith("- "):
            schema["analytics"].append(parse_analytics(line[2:]))
    block: list[str] = []
    heading = None
    for line in [*sec.get("Actions", []), "## end"]:
        if line.startswith("## "):
            if heading:
                ent, _, name = heading.partition(".")
                schema["actions"].append(parse_action(ent, name, block))
            heading, block = line[3:].strip(), []
        else:
            block.append(line)
    return schema


def parse_analytics(text: str) -> dict[str, Any]:
    m = _ANALYTICS.match(text)
    if not m:
        raise ValueError(f"cannot read analytics endpoint {text!r}")
    if m.group("op"):
        return {"entity": m.group("entity"), "op": m.group("op"), "field": m.group("field")}
    return {"entity": m.group("entity"), "op": "count"}


def _also(line: str) -> dict[str, Any]:
    text = line.removeprefix("Also: ").removesuffix(".")
    if m := re.match(r"^the analytics endpoint `GET (\S+)` is removed$", text):
        return {"what": "analytics", "path": m.group(1)}
    if m := re.match(r"^the action `(\w+)\.(\w+)` is removed$", text):
        return {"what": "action", "entity": m.group(1), "name": m.group(2)}
    if m := re.match(r"^the (guard|effect) `(.+)` of `(\w+)\.(\w+)` is removed$", text):
        item = parse_condition(m.group(2)) if m.group(1) == "guard" else parse_effect(m.group(2))
        return {"what": m.group(1), "entity": m.group(3), "name": m.group(4), "item": item}
    raise ValueError(f"cannot read consequence {line!r}")


def _items(prompt: str) -> list[list[str]]:
    items: list[list[str]] = []
    for line in prompt.splitlines():
        if re.match(r"^\d+\. ", line):
            items.append([line.split(". ", 1)[1]])
        elif line.startswith("   ") and items:
            items[-1].append(line[3:])
    return items


def parse_changes(prompt: str) -> list[dict[str, Any]]:
    """A change prompt -> the list of changes, in order, as the agent's model understands them."""
    return [parse_change(item) for item in _items(prompt)]


def parse_change(item: list[str]) -> dict[str, Any]:
    head, rest = item[0], [line.strip() for line in item[1:]]
    if m := re.match(r"^Add the entity `(\w+)`", head):
        enums = [
            parse_enum(x.removeprefix("New enum type ").removesuffix("."))
            for x in rest
            if x.startswith("New enum type")
        ]
        fields = [parse_field(x[2:]) for x in rest if x.startswith("- `")]
        return {"kind": "add_entity", "name": m.group(1), "enums": enums, "fields": fields}
    if m := re.match(r"^Delete the entity `(\w+)`", head):
        refs = [list(re.findall(r"`(\w+)\.(\w+)`", x)[0]) for x in rest if x.startswith("Also remove the field")]
        return {
            "kind": "delete_entity",
            "name": m.group(1),
            "fields": refs,
            "also": [_also(x) for x in rest if x.startswith("Also: ")],
        }
    if m := re.match(r"^Rename the entity `(\w+)` to `(\w+)`", head):
        return {"kind": "rename_entity", "old": m.group(1), "new": m.group(2)}
    if m := re.match(r"^(?:New enum type (.+?)\. )?Add to `(\w+)` the field (.+)\.$", head):
        enums = [parse_enum(m.group(1))] if m.group(1) else []
        return {"kind": "add_field", "entity": m.group(2), "field": parse_field(m.group(3)), "enums": enums}
    if m := re.match(r"^Delete the field `(\w+)` from `(\w+)`\.$", head):
        return {
            "kind": "delete_field",
            "entity": m.group(2),
            "field": m.group(1),
            "also": [_also(x) for x in rest if x.startswith("Also: ")],
        }
    if m := re.match(r"^Rename the field `(\w+)` of `(\w+)` to `(\w+)`", head):
        return {"kind": "rename_field", "entity": m.group(2), "old": m.group(1), "new": m.group(3)}
    if m := re.match(r"^Change the bounds of `(\w+)\.(\w+)` to: (.+)\. Any bound", head):
        return {"kind": "change_bounds", "entity": m.group(1), "field": m.group(2), "text": m.group(3)}
    if m := re.match(r"^Add the analytics endpoint (.+)\.$", head):
        return {"kind": "add_analytics", "analytics": parse_analytics(m.group(1))}
    if m := re.match(r"^Remove the analytics endpoint `GET (\S+)`\.$", head):
        return {"kind": "delete_analytics", "path": m.group(1)}
    if m := re.match(r"^Add the action `(\w+)\.(\w+)`:$", head):
        return {"kind": "add_action", "action": parse_action(m.group(1), m.group(2), item[1:])}
    if m := re.match(r"^Remove the action `(\w+)\.(\w+)`", head):
        return {"kind": "remove_action", "entity": m.group(1), "name": m.group(2)}
    if m := re.match(r"^(Add|Remove) the guard `(.+)` (?:to|from) the action `(\w+)\.(\w+)`", head):
        return {
            "kind": f"{m.group(1).lower()}_guard",
            "entity": m.group(3),
            "action": m.group(4),
            "item": parse_condition(m.group(2)),
        }
    if m := re.match(r"^(Add|Remove) the effect `(.+)` (?:to|from) the action `(\w+)\.(\w+)`", head):
        return {
            "kind": f"{m.group(1).lower()}_effect",
            "entity": m.group(3),
            "action": m.group(4),
            "item": parse_effect(m.group(2)),
        }
    if m := re.match(r"^Add the value (\w+) to the enum type `(\w+)`\.$", head):
        return {"kind": "add_enum_value", "enum": m.group(2), "value": m.group(1)}
    raise ValueError(f"cannot read change request {head!r}")
