"""The small grammar every rendered text uses for fields, bounds, guards and effects.

Kept in one place so the spec, the change prompts and the reference agent's parser agree on one
wording. Literals are written as JSON (`"open"`, `3`, `2.5`, `true`) so they read back exactly.
"""

from __future__ import annotations

import json

from staminad.bench.schema import (
    ArithOperand,
    Compute,
    Condition,
    CountOperand,
    Effect,
    Field,
    FieldOperand,
    ForEach,
    Increment,
    NullCheck,
    OnReference,
    Quantified,
    SetValue,
    State,
    SumOperand,
)


def counted(n: int, noun: str, plural: str = "") -> str:
    """`n` and the noun in the number that agrees with it: `1 relationship`, `2 relationships`, `0 entities`
    (`plural` where adding an s is wrong)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def lit(value: object) -> str:
    """A literal as JSON: strings quoted, numbers as Python writes them, booleans lowercase."""
    return json.dumps(value)


def bounds_phrase(f: Field) -> str:
    """`between 0 and 100 inclusive`, `length at most 50 inclusive`, or `` when unbounded."""
    if f.kind in ("integer", "float"):
        lo, hi, unit = f.minimum, f.maximum, ""
    elif f.kind == "string":
        lo, hi, unit = f.min_length, f.max_length, "length "
    elif f.kind == "datetime":
        lo, hi, unit = f.after, f.before, ""  # type: ignore[assignment]
    else:
        return ""
    if lo is not None and hi is not None:
        return f"{unit}between {lit(lo)} and {lit(hi)} inclusive"
    if lo is not None:
        return f"{unit}at least {lit(lo)} inclusive"
    if hi is not None:
        return f"{unit}at most {lit(hi)} inclusive"
    return ""


def type_phrase(f: Field) -> str:
    if f.kind == "enum":
        return f"enum {f.enum}"
    if f.kind == "ref":
        return f"reference to {f.target}"
    if f.kind == "ref_list":
        return f"list of references to {f.target}"
    if f.kind == "datetime":
        return "datetime (YYYY-MM-DD hh:mm:ss)"
    return f.kind


def field_phrase(f: Field) -> str:
    """`required, non-nullable string (length between 5 and 20 inclusive), default "x"`."""
    text = f"{'required' if f.required else 'optional'}, {'nullable' if f.nullable else 'non-nullable'} "
    text += type_phrase(f)
    bounds = bounds_phrase(f)
    if bounds:
        text += f" ({bounds})"
    if f.has_default:
        text += f", default {lit(f.default)}"
    elif f.kind == "ref_list":
        text += ", default []"
    return text


def field_line(f: Field) -> str:
    return f"`{f.name}`: {field_phrase(f)}"


def operand_phrase(op: FieldOperand | ArithOperand | CountOperand | SumOperand) -> str:
    if isinstance(op, FieldOperand):
        return f"this.{op.field}"
    if isinstance(op, ArithOperand):
        return f"this.{op.left} {op.op} this.{op.right}"
    if isinstance(op, CountOperand):
        return f"count(this.{op.list_field})"
    return f"sum(this.{op.list_field}.{op.field})"


def condition_phrase(c: Condition) -> str:
    if isinstance(c, NullCheck):
        return f"this.{c.field} is {'null' if c.is_null else 'not null'}"
    if isinstance(c, Quantified):
        verb = "has" if c.quantifier == "any" else "have"
        return f"{c.quantifier} of this.{c.list_field} {verb} {c.field} {c.op} {lit(c.value)}"
    return f"{operand_phrase(c.left)} {c.op} {lit(c.value)}"


def _simple_phrase(x: SetValue | Increment, prefix: str) -> str:
    if isinstance(x, SetValue):
        return f"set {prefix}{x.field} to {lit(x.value)}"
    if x.amount < 0:
        return f"decrease {prefix}{x.field} by {lit(-x.amount)}"
    return f"increase {prefix}{x.field} by {lit(x.amount)}"


def effect_phrase(state: State, entity: str, x: Effect) -> str:
    """An effect; cross-entity effects name the entity type they reach, as of `state`."""
    if isinstance(x, SetValue | Increment):
        return _simple_phrase(x, "this.")
    if isinstance(x, Compute):
        return f"set this.{x.field} to this.{x.left} {x.op} this.{x.right}"
    link = x.ref_field if isinstance(x, OnReference) else x.list_field
    owner = state.entity(entity)
    f = owner.field(link) if owner else None
    target = f.target if f and f.target else "entity"
    if isinstance(x, OnReference):
        return f"on the referenced {target} (this.{link}): {_simple_phrase(x.effect, '')}"
    assert isinstance(x, ForEach)
    return f"for each {target} in this.{link}: {_simple_phrase(x.effect, '')}"
