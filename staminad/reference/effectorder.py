"""When the order of an action's effects shows in its answers (one effect reads or shifts what another writes): the
`exercised` predicate of the mutant that applies effects in another order."""

from __future__ import annotations

from staminad.bench.schema import (
    Action,
    Compute,
    Effect,
    ForEach,
    Increment,
    NullCheck,
    OnReference,
    State,
)
from staminad.reference.effectcases import writes
from staminad.reference.exercised import (
    actions,
    others_hold,
)


def _reads(x: Effect) -> set[tuple[str, str] | None]:
    """What an effect reads besides the field it writes: a computation's operands."""
    return {("", x.left), ("", x.right)} if isinstance(x, Compute) else set()


def _shift(x: Effect) -> str | None:
    """The own field `x` shifts by an amount or by another field (`f + 2`, `f + g`, `f - g`), if it does."""
    if isinstance(x, Increment):
        return x.field
    if isinstance(x, Compute) and (
        (x.op == "+" and (x.left == x.field) != (x.right == x.field))
        or (x.op == "-" and x.left == x.field and x.right != x.field)
    ):
        return x.field
    return None


def _shifts(x: Effect, y: Effect) -> bool:
    """Two shifts of one field commute (what else they read is another pair's conflict)."""
    return _shift(x) is not None and _shift(x) == _shift(y)


def _zero_stays(x: Effect, y: Effect) -> bool:
    """`y` is `f = f - f` (0) and `x` maps f = 0 to 0 (`f + f`, `f * g`, `f - f`): either order ends at 0."""
    if not (
        isinstance(x, Compute)
        and isinstance(y, Compute)
        and x.field == y.field
        and y.op == "-"
        and y.left == y.right == y.field
    ):
        return False
    f = x.field
    return (x.left == x.right == f and x.op in "+-*") or (x.op == "*" and f in (x.left, x.right))


def _conflict(x: Effect, y: Effect) -> bool:
    """Applying x then y can end differently from y then x (two increments of one field commute)."""
    if _shifts(x, y) or _zero_stays(x, y) or _zero_stays(y, x):
        return False
    wx, wy = writes(x), writes(y)
    inner_x = x.effect if isinstance(x, OnReference | ForEach) else x
    inner_y = y.effect if isinstance(y, OnReference | ForEach) else y
    if wx == wy and not (isinstance(inner_x, Increment) and isinstance(inner_y, Increment)):
        return True
    return wx in _reads(y) or wy in _reads(x)


def _pinned_null(action: Action, name: str) -> bool:
    return any(isinstance(c, NullCheck) and c.is_null and c.field == name for c in action.conditions)


def _noop(action: Action, x: Effect, dead: list[Effect]) -> bool:
    """An effect that can never change anything: its input or reference is pinned null by an `is null` guard
    and no live effect writes it (the `dead` ones are no-ops themselves), so in either order it reads null."""
    live = [y for y in action.effects if y is not x and not any(y is d for d in dead)]  # x reads before it writes
    if isinstance(x, Increment):
        return _pinned_null(action, x.field) and not any(
            writes(y) == ("", x.field) and not isinstance(y, Increment) for y in live
        )
    if isinstance(x, Compute):
        return any(_pinned_null(action, o) and not any(writes(y) == ("", o) for y in live) for o in (x.left, x.right))
    return isinstance(x, OnReference) and _pinned_null(action, x.ref_field)


def _noops(action: Action) -> list[Effect]:
    """The effects that can never change anything, to a fixed point: two computations reading the same pinned
    null field write only each other's inputs, and neither ever writes."""
    dead: list[Effect] = []
    grew = True
    while grew:
        grew = False
        for x in action.effects:
            if not any(x is d for d in dead) and _noop(action, x, dead):
                dead.append(x)
                grew = True
    return dead


def order_matters(state: State) -> bool:
    def live(a: Action) -> list[Effect]:
        dead = _noops(a)
        return [x for x in a.effects if not any(x is d for d in dead)]

    return any(
        others_hold(state, e, a) and any(_conflict(x, y) for i, x in enumerate(live(a)) for y in live(a)[i + 1 :])
        for a, e in actions(state)
    )
