"""desc_state and desc_action: `initial_specification.md`, the turn-0 prompt and each change prompt.

Every fact a test checks is stated here or in the README. Change prompts are rendered against the
state *before* the change, so they can name the consequences of a deletion (which analytics,
guards and effects go with it) instead of leaving the agent to guess.
"""

from __future__ import annotations

from collections.abc import Sequence

from staminad.bench.changes import (
    AddAction,
    AddAnalytics,
    AddCondition,
    AddEffect,
    AddEntity,
    AddEnumValue,
    AddField,
    Change,
    ChangeConstraints,
    DeleteAnalytics,
    DeleteEntity,
    DeleteField,
    RemoveAction,
    RemoveCondition,
    RemoveEffect,
    RenameEntity,
    RenameField,
)
from staminad.bench.phrases import bounds_phrase, condition_phrase, counted, effect_phrase, field_line
from staminad.bench.readme import language_name
from staminad.bench.schema import Action, Analytics, EnumType, State, endpoint_of

_OP_WORDS = {"avg": "average", "min": "minimum", "max": "maximum", "sum": "sum"}


def analytics_line(a: Analytics, state: State) -> str:
    if a.op == "count":
        return f"`GET {a.path()}`: number of {a.entity} entities (integer)"
    entity = state.entity(a.entity)
    f = entity.field(a.field or "") if entity else None
    kind = "float" if a.op == "avg" or (f is not None and f.kind == "float") else "integer"
    return f"`GET {a.path()}`: {_OP_WORDS[a.op]} of `{a.field}` over all {a.entity} entities ({kind})"


def enum_line(e: EnumType) -> str:
    return f"`{e.name}`: {', '.join(e.values)}"


def action_block(a: Action, state: State) -> list[str]:
    """The lines describing one action, shared by the spec and the add-action prompt."""
    lines = [
        f"`POST /{endpoint_of(a.entity)}/{{id}}/{a.name}`",
        f"- Allowed when `{a.field}` is one of: {', '.join(a.sources)} (otherwise 400).",
    ]
    if a.conditions:
        lines.append("- Guards, all must hold (otherwise 409):")
        lines += [f"  - {condition_phrase(c)}" for c in a.conditions]
    else:
        lines.append("- Guards: none.")
    if a.effects:
        lines.append("- Effects, in this order:")
        lines += [f"  - {effect_phrase(state, a.entity, x)}" for x in a.effects]
    else:
        lines.append("- Effects: none.")
    lines.append(f"- Then sets `{a.field}` to {a.target} and returns the updated {a.entity}.")
    return lines


def render_spec(state: State) -> str:
    """`initial_specification.md` for s_0 (also used to show any later state)."""
    out = [
        "# Specification",
        "",
        f"The system has {counted(len(state.entities), 'entity', 'entities')}, "
        f"{counted(state.relationship_count(), 'relationship')} between entities, "
        f"{counted(len(state.analytics), 'analytics endpoint')} and {counted(len(state.actions), 'action')}.",
        "",
        "# Enum types",
        "",
    ]
    out += [f"- {enum_line(e)}" for e in state.enums] or ["None."]
    out += ["", "# Entities", ""]
    for e in state.entities:
        out += [
            f"## {e.name}",
            "",
            f"Endpoint: `/{e.endpoint}`; one entity at `/{e.endpoint}/{{id}}`.",
            "",
            "Fields:",
            "- `id`: required, non-nullable string, unique, chosen by the client",
        ]
        out += [f"- {field_line(f)}" for f in e.fields]
        out.append("")
    out += ["# Analytics endpoints", ""]
    out += [f"- {analytics_line(a, state)}" for a in state.analytics] or ["None."]
    out += ["", "# Actions", ""]
    if not state.actions:
        out += ["None.", ""]
    for a in state.actions:
        out += [f"## {a.entity}.{a.name}", "", *action_block(a, state), ""]
    return "\n".join(out)


def initial_prompt(language: str = "python") -> str:
    return (
        "Implement the REST API server described in `initial_specification.md`, following every rule in "
        f"`README.md`. Use {language_name(language)}. When you are done, `bash run_server.sh <port>` must start "
        "it.\n"
    )


def _consequences(before: State, after: State) -> list[str]:
    """What a deletion took with it: analytics, actions, guards and effects that are gone."""
    notes: list[str] = []
    if after.analytics is not before.analytics:  # (the same tuple: none is gone)
        gone_paths = {a.path() for a in before.analytics} - {a.path() for a in after.analytics}
        notes += [
            f"the analytics endpoint `GET {x.path()}` is removed" for x in before.analytics if x.path() in gone_paths
        ]
    for a in before.actions if after.actions is not before.actions else ():
        if after.entity(a.entity) is None:
            continue
        b = after.action(a.entity, a.name)
        if b is None:
            notes.append(f"the action `{a.entity}.{a.name}` is removed")
            continue
        if b is a:
            continue  # kept whole
        notes += [
            f"the guard `{condition_phrase(c)}` of `{a.entity}.{a.name}` is removed"
            for c in a.conditions
            if c not in b.conditions
        ]
        notes += [
            f"the effect `{effect_phrase(before, a.entity, x)}` of `{a.entity}.{a.name}` is removed"
            for x in a.effects
            if x not in b.effects
        ]
    return notes


def _field_intro(c: AddField) -> str:
    enum = f"New enum type {enum_line(c.new_enum)}. " if c.new_enum else ""
    return f"{enum}Add to `{c.entity}` the field {field_line(c.field)}."


def describe_change(change: Change, before: State, after: State) -> list[str]:  # noqa: C901 - one case per change kind (a match over the Change union)
    """desc_action for one atomic change (`after` is its result), as the lines of one numbered item."""
    match change:
        case AddEntity(entity=e, new_enums=enums):
            lines = [f"Add the entity `{e.name}` (endpoint `/{e.endpoint}`)."]
            lines += [f"  New enum type {enum_line(x)}." for x in enums]
            lines.append("  Fields:")
            lines += [f"  - {field_line(f)}" for f in e.fields]
            return lines
        case DeleteEntity(name=name):
            lines = [f"Delete the entity `{name}`: its endpoints, analytics and actions are removed."]
            for other in before.entities:
                lines += [
                    f"  Also remove the field `{other.name}.{f.name}`, which references it."
                    for f in other.fields
                    if f.target == name
                ]
            lines += [f"  Also: {n}." for n in _consequences(before, after)]
            return lines
        case RenameEntity(old=old, new=new):
            return [
                f"Rename the entity `{old}` to `{new}`: its endpoints move from `/{endpoint_of(old)}` to "
                f"`/{endpoint_of(new)}`, with its analytics and action paths; the old paths must answer 404. "
                "Fields of other entities that reference it keep their names."
            ]
        case AddField():
            return [_field_intro(change)]
        case DeleteField(entity=entity, field=field):
            lines = [f"Delete the field `{field}` from `{entity}`."]
            return lines + [f"  Also: {n}." for n in _consequences(before, after)]
        case RenameField(entity=entity, old=old, new=new):
            return [
                f"Rename the field `{old}` of `{entity}` to `{new}`, updating every analytics path, guard and "
                "effect that uses it."
            ]
        case ChangeConstraints(entity=entity, field=field):
            owner = after.entity(entity)
            f = owner.field(field) if owner else None
            assert f is not None
            return [
                f"Change the bounds of `{entity}.{field}` to: {bounds_phrase(f)}. Any bound not stated here "
                "no longer applies."
            ]
        case AddAnalytics(analytics=a):
            return [f"Add the analytics endpoint {analytics_line(a, after)}."]
        case DeleteAnalytics(analytics=a):
            return [f"Remove the analytics endpoint `GET {a.path()}`."]
        case AddAction(action=a):
            return [f"Add the action `{a.entity}.{a.name}`:", *(f"  {line}" for line in action_block(a, after))]
        case RemoveAction(entity=entity, name=name):
            return [f"Remove the action `{entity}.{name}` (`POST /{endpoint_of(entity)}/{{id}}/{name}`)."]
        case AddCondition(entity=entity, action=action, condition=c):
            return [f"Add the guard `{condition_phrase(c)}` to the action `{entity}.{action}`."]
        case RemoveCondition(entity=entity, action=action, condition=c):
            return [f"Remove the guard `{condition_phrase(c)}` from the action `{entity}.{action}`."]
        case AddEffect(entity=entity, action=action, effect=x):
            return [
                f"Add the effect `{effect_phrase(before, entity, x)}` to the action `{entity}.{action}`, "
                "after its existing effects."
            ]
        case RemoveEffect(entity=entity, action=action, effect=x):
            return [f"Remove the effect `{effect_phrase(before, entity, x)}` from the action `{entity}.{action}`."]
        case AddEnumValue(enum=enum, value=value):
            return [f"Add the value {value} to the enum type `{enum}`."]
    raise TypeError(f"no description for {type(change).__name__}")


def change_prompt(changes: Sequence[Change], before: State) -> tuple[str, State]:
    """The prompt of one change turn (every change, numbered, in order) and the state it leads to."""
    states = [before]
    for change in changes:
        change.validate(states[-1])
        states.append(change.apply(states[-1]))
    return render_change_prompt(changes, states), states[-1]


def render_change_prompt(changes: Sequence[Change], states: Sequence[State]) -> str:
    """`change_prompt`'s text from the states around each change already known: `states[i]` is the
    state before `changes[i]` and `states[i + 1]` its result (so a generated scenario's states, kept
    from generation, are not validated and applied a second time)."""
    assert len(states) == len(changes) + 1, (len(states), len(changes))
    lines = ["The tests passed. Now make the following changes, in this order:", ""]
    for i, change in enumerate(changes, 1):
        item = describe_change(change, states[i - 1], states[i])
        lines.append(f"{i}. {item[0]}")
        lines += [f"   {line}" for line in item[1:]]
    lines += [
        "",
        "Keep following every rule in `README.md`. `bash run_server.sh <port>` must still start the server.",
        "",
    ]
    return "\n".join(lines)
