"""The state space S: a typed REST-API design (entities, fields, enums, analytics, actions).

Everything here is a frozen msgspec Struct so a state can be hashed, compared, and written to a
scenario pack byte for byte. The module holds only data shapes and the lookups every other
module needs; the transition, generator and renderings live beside it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cached_property
from itertools import count
from operator import attrgetter
from typing import Literal

import msgspec

FieldKind = Literal["string", "integer", "float", "boolean", "enum", "datetime", "ref", "ref_list"]
NUMERIC_KINDS: frozenset[str] = frozenset({"integer", "float"})
BOUNDED_KINDS: frozenset[str] = frozenset({"integer", "float", "string", "datetime"})  # what constraints bound
AnalyticsOp = Literal["avg", "min", "max", "sum", "count"]
CompareOp = Literal["<", "<=", ">", ">=", "==", "!="]
ArithOp = Literal["+", "-", "*"]
Scalar = str | int | float | bool

DATETIME_MIN = "2020-01-01 00:00:00"
DATETIME_MAX = "2030-12-31 23:59:59"

_CAMEL = re.compile(r"^[A-Z][a-z0-9]*(?:[A-Z][a-z0-9]*)*$")
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")


def is_camel(name: str) -> bool:
    """True for CamelCase entity and enum type names such as `CoffeeBatch`."""
    return bool(_CAMEL.match(name))


def is_snake(name: str) -> bool:
    """True for snake_case field, action and enum value names such as `roast_date`."""
    return bool(_SNAKE.match(name))


def endpoint_of(entity_name: str) -> str:
    """The URL segment of an entity: its name lowercased with no separators."""
    return entity_name.lower()


class Field(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One field of an entity. `id` is implicit on every entity and never listed here."""

    name: str
    kind: FieldKind
    required: bool = False
    nullable: bool = False
    has_default: bool = False
    default: Scalar | None = None
    enum: str | None = None  # enum type name, for kind == "enum"
    target: str | None = None  # entity name, for kind in ("ref", "ref_list")
    minimum: int | float | None = None
    maximum: int | float | None = None
    min_length: int | None = None
    max_length: int | None = None
    after: str | None = None  # datetime lower bound, inclusive
    before: str | None = None  # datetime upper bound, inclusive


class EnumType(msgspec.Struct, frozen=True, kw_only=True):
    """A named, case-sensitive set of string values."""

    name: str
    values: tuple[str, ...]


class Entity(msgspec.Struct, frozen=True, kw_only=True, dict=True):
    """A resource with CRUD endpoints at `/{endpoint}`.

    `dict=True` lets what its fields name be cached per (immutable) entity: an entity outlives many states,
    and removals and renames ask every entity of a state what it references."""

    name: str
    fields: tuple[Field, ...]

    @cached_property
    def targets(self) -> frozenset[str]:
        """The entities its reference fields point at."""
        return frozenset(f.target for f in self.fields if f.target is not None)

    @cached_property
    def kinds(self) -> frozenset[str]:
        """The kinds of its fields."""
        return frozenset(f.kind for f in self.fields)

    @cached_property
    def bounded_fields(self) -> tuple[Field, ...]:
        """Its fields that take bounds (numbers, strings, datetimes), in order."""
        return tuple(f for f in self.fields if f.kind in BOUNDED_KINDS)

    @cached_property
    def enum_types(self) -> frozenset[str]:
        """The enum types its enum fields use."""
        return frozenset(f.enum for f in self.fields if f.enum)

    @property
    def endpoint(self) -> str:
        return endpoint_of(self.name)

    def field(self, name: str) -> Field | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


class Analytics(msgspec.Struct, frozen=True, kw_only=True):
    """An aggregate endpoint: `op` over `field` of every `entity` (no field for count)."""

    entity: str
    op: AnalyticsOp
    field: str | None = None

    def path(self) -> str:
        if self.op == "count":
            return f"/analytics/{endpoint_of(self.entity)}/count"
        return f"/analytics/{endpoint_of(self.entity)}/{self.field}/{self.op}"


# --- guard conditions -------------------------------------------------------------------------


class FieldOperand(msgspec.Struct, frozen=True, tag="field"):
    """`this.<field>`."""

    field: str


class ArithOperand(msgspec.Struct, frozen=True, tag="arith"):
    """`this.<left> <op> this.<right>` over two numeric fields."""

    left: str
    op: ArithOp
    right: str


class CountOperand(msgspec.Struct, frozen=True, tag="count"):
    """`count(this.<list_field>)`."""

    list_field: str


class SumOperand(msgspec.Struct, frozen=True, tag="sum"):
    """`sum(this.<list_field>.<field>)`, skipping nulls."""

    list_field: str
    field: str


Operand = FieldOperand | ArithOperand | CountOperand | SumOperand


class Compare(msgspec.Struct, frozen=True, tag="compare"):
    """`<operand> <op> <literal>`; false when any value involved is null."""

    left: Operand
    op: CompareOp
    value: Scalar


class NullCheck(msgspec.Struct, frozen=True, tag="null"):
    """`this.<field> is null` or `is not null`."""

    field: str
    is_null: bool


class Quantified(msgspec.Struct, frozen=True, tag="quantified"):
    """`any`/`all` entities referenced by a list field satisfy `item.<field> <op> <value>`."""

    quantifier: Literal["any", "all"]
    list_field: str
    field: str
    op: CompareOp
    value: Scalar


Condition = Compare | NullCheck | Quantified


# --- effects -----------------------------------------------------------------------------------


class SetValue(msgspec.Struct, frozen=True, tag="set"):
    """Set `<field>` to a literal."""

    field: str
    value: Scalar | None


class Increment(msgspec.Struct, frozen=True, tag="increment"):
    """Add a literal (possibly negative) to a numeric `<field>`."""

    field: str
    amount: int | float


class Compute(msgspec.Struct, frozen=True, tag="compute"):
    """`this.<field> = this.<left> <op> this.<right>`."""

    field: str
    left: str
    op: ArithOp
    right: str


class OnReference(msgspec.Struct, frozen=True, tag="on_ref"):
    """Apply `effect` to the entity referenced by `ref_field` (skipped when it is null)."""

    ref_field: str
    effect: SetValue | Increment


class ForEach(msgspec.Struct, frozen=True, tag="for_each"):
    """Apply `effect` to every entity referenced by `list_field`."""

    list_field: str
    effect: SetValue | Increment


Effect = SetValue | Increment | Compute | OnReference | ForEach


class Action(msgspec.Struct, frozen=True, kw_only=True, dict=True):
    """POST `/{entity}/{id}/{name}`: moves enum `field` from one of `sources` to `target`.

    `dict=True` lets `integrity.prune` keep its verdict on the (immutable) action with what it was drawn from,
    so an action whose entity, targets and enum types are unchanged is not checked again."""

    entity: str
    name: str
    field: str
    sources: tuple[str, ...]
    target: str
    conditions: tuple[Condition, ...] = ()
    effects: tuple[Effect, ...] = ()


_NAME = attrgetter("name")
_ACTION_KEY = attrgetter("entity", "name")


class State(msgspec.Struct, frozen=True, kw_only=True, dict=True):
    """A full reference design `s_t`.

    `dict=True` lets the name indexes below be cached per (immutable) state: states reach hundreds
    of entities in long scenarios and are queried by name constantly.
    """

    enums: tuple[EnumType, ...] = ()
    entities: tuple[Entity, ...] = ()
    analytics: tuple[Analytics, ...] = ()
    actions: tuple[Action, ...] = ()

    @cached_property
    def _entity_index(self) -> dict[str, Entity]:
        return dict(zip(map(_NAME, self.entities), self.entities, strict=True))  # loops in C: states grow large

    @cached_property
    def _enum_index(self) -> dict[str, EnumType]:
        return dict(zip(map(_NAME, self.enums), self.enums, strict=True))

    @cached_property
    def _action_index(self) -> dict[tuple[str, str], Action]:
        return dict(zip(map(_ACTION_KEY, self.actions), self.actions, strict=True))

    @cached_property
    def _entity_position(self) -> dict[str, int]:
        return dict(zip(map(_NAME, self.entities), count()))

    @cached_property
    def endpoints(self) -> frozenset[str]:
        """The endpoints its entities take."""
        return frozenset(map(str.lower, map(_NAME, self.entities)))  # endpoint_of, in C

    @cached_property
    def _action_position(self) -> dict[tuple[str, str], int]:
        return dict(zip(map(_ACTION_KEY, self.actions), count()))

    def entity(self, name: str) -> Entity | None:
        return self._entity_index.get(name)

    def evolve(
        self,
        *,
        enums: tuple[EnumType, ...] | None = None,
        entities: tuple[Entity, ...] | None = None,
        analytics: tuple[Analytics, ...] | None = None,
        actions: tuple[Action, ...] | None = None,
    ) -> State:
        """This state with the parts given replaced; the name indexes of the parts kept (the same
        tuples) are carried over rather than rebuilt on the new state's first lookup."""
        new = State(
            enums=self.enums if enums is None else enums,
            entities=self.entities if entities is None else entities,
            analytics=self.analytics if analytics is None else analytics,
            actions=self.actions if actions is None else actions,
        )
        kept = {
            "_entity_index": new.entities is self.entities,
            "_entity_position": new.entities is self.entities,
            "endpoints": new.entities is self.entities,
            "_enum_index": new.enums is self.enums,
            "_action_index": new.actions is self.actions,
            "_action_position": new.actions is self.actions,
        }
        for name, same in kept.items():
            if same and name in self.__dict__:
                new.__dict__[name] = self.__dict__[name]  # never mutated, so sharing is safe
        return new

    def with_entity(self, entity: Entity) -> State:
        """This state with the entity of `entity`'s name replaced by it (unchanged when there is none).

        Changes replace one entity at a time and states hold hundreds, so the new state reuses this
        one's name indexes (one entry differs) instead of rebuilding them on its first lookup.
        """
        pos = self._entity_position.get(entity.name)
        if pos is None:
            return self
        entities = (*self.entities[:pos], entity, *self.entities[pos + 1 :])
        new = self.evolve(entities=entities)
        index = self._entity_index.copy()
        index[entity.name] = entity
        new.__dict__["_entity_index"] = index
        new.__dict__["_entity_position"] = self._entity_position  # same names at the same places; never mutated
        if "endpoints" in self.__dict__:
            new.__dict__["endpoints"] = self.endpoints  # the same names
        return new

    def with_action(self, action: Action) -> State:
        """This state with the action of `action`'s entity and name replaced by it (unchanged when there is
        none), reusing this state's action indexes as `with_entity` does its entity indexes."""
        key = (action.entity, action.name)
        pos = self._action_position.get(key)
        if pos is None:
            return self
        new = self.evolve(actions=(*self.actions[:pos], action, *self.actions[pos + 1 :]))
        index = self._action_index.copy()
        index[key] = action
        new.__dict__["_action_index"] = index
        new.__dict__["_action_position"] = self._action_position  # same keys at the same places; never mutated
        return new

    def with_added_action(self, action: Action) -> State:
        """This state with `action` appended, the action indexes it has extended rather than rebuilt."""
        key = (action.entity, action.name)
        new = self.evolve(actions=(*self.actions, action))
        for name, value in (("_action_index", action), ("_action_position", len(self.actions))):
            if name in self.__dict__:
                index = self.__dict__[name].copy()
                index[key] = value
                new.__dict__[name] = index
        return new

    def entities_named(self, names: Iterable[str]) -> tuple[Entity | None, ...]:
        """The entity of each name, None where there is none (one lookup each, in C)."""
        return tuple(map(self._entity_index.get, names))

    def enums_named(self, names: Iterable[str]) -> tuple[EnumType | None, ...]:
        """The enum type of each name, None where there is none."""
        return tuple(map(self._enum_index.get, names))

    def enum(self, name: str) -> EnumType | None:
        return self._enum_index.get(name)

    def action(self, entity: str, name: str) -> Action | None:
        return self._action_index.get((entity, name))

    def relationship_count(self) -> int:
        return sum(1 for e in self.entities for f in e.fields if f.kind in ("ref", "ref_list"))


STATE_ENCODER = msgspec.json.Encoder()
STATE_DECODER = msgspec.json.Decoder(State)


def dump_state(state: State) -> bytes:
    """Canonical JSON bytes of a state (field order fixed by the Struct definitions)."""
    return STATE_ENCODER.encode(state)


def load_state(data: bytes) -> State:
    return STATE_DECODER.decode(data)
