"""The suite being built: its state, its draws and `add`, and the value helpers the families of tests use.

The families (`entitytests`, `fieldtests`, `historytests`, ...) are tables of functions over a `Builder`;
`generate` runs them in order.
"""

from __future__ import annotations

import math
import random
from typing import Any

from staminad.bench.datetimes import parse_datetime
from staminad.bench.schema import Entity, Field, State
from staminad.suite.data import stored, stored_checks
from staminad.suite.draws import SuiteRandom
from staminad.suite.model import OK, Test, req


def create_steps(entity: Entity, body: dict[str, Any], state: State, why: str = "") -> list[Any]:
    """POST a valid body and check the stored object comes back, then read it back."""
    expected = stored(state, entity, body)
    return [
        req(
            "POST",
            f"/{entity.endpoint}",
            body,
            expect=OK,
            checks=stored_checks(expected),
            why=why or f"a valid {entity.name} must be created",
        ),
        req(
            "GET",
            f"/{entity.endpoint}/{body['id']}",
            checks=stored_checks(expected),
            why=f"the created {entity.name} must read back as stored",
        ),
    ]


class Builder:
    """What every family of tests works on: the state, the draws, and the tests made so far (names kept unique)."""

    def __init__(self, state: State, rng: SuiteRandom) -> None:
        self.state = state
        self.rng = rng
        # The input-class tests draw from a stream of their own, split off this one without drawing from it,
        # so the data of every other test stays as it was before they existed.
        split = random.Random()
        split.setstate(rng.getstate())
        self.class_rng = SuiteRandom(0, 0)
        self.class_rng.attempt = rng.attempt
        self.class_rng.seed(f"classes/{split.getrandbits(64)}")
        self.tests: list[Test] = []
        self.names: set[str] = set()

    def add(self, name: str, category: str, rule: str, steps: list[Any], classes: tuple[str, ...] = ()) -> None:
        base, n = name, 2
        while name in self.names:
            name, n = f"{base}_{n}", n + 1
        self.names.add(name)
        self.tests.append(
            Test(name=name, category=category, rule=rule, steps=tuple(steps), classes=classes)  # type: ignore[arg-type]
        )


def whole_number(f: Field) -> int:
    """An integer inside a float field's bounds."""
    lo = math.ceil(f.minimum) if f.minimum is not None else None
    hi = math.floor(f.maximum) if f.maximum is not None else None
    if lo is not None:
        return lo + 1 if hi is None or lo + 1 <= hi else lo
    return hi - 1 if hi is not None else 5


def ids_left(fix: list[Any], ep: str, own: tuple[str, ...], victim: str) -> list[str]:
    """Ids of `ep` entities a cascade test leaves: its own entities and fixtures of the same type (self references)."""
    made = [s.body["id"] for s in fix if s.method == "POST" and s.path == f"/{ep}"]
    return [i for i in (*made, *own) if i != victim]


NO_VALUE = object()
STALE = {"removed": "key"}  # an old key's value: an object, which no field accepts


def falsy_value(f: Field) -> Any:
    """A valid value that is false in a boolean context (0, false, ""), unless it is the default: else NO_VALUE."""
    v: Any = NO_VALUE
    if f.kind == "boolean":
        v = False
    elif (
        f.kind in ("integer", "float")
        and (f.minimum is None or f.minimum <= 0)
        and (f.maximum is None or f.maximum >= 0)
    ):
        v = 0
    elif f.kind == "string" and not f.min_length:
        v = ""
    return NO_VALUE if v is NO_VALUE or (f.has_default and f.default == v) else v


def bad_date(f: Field, hour: bool = False) -> str:
    year = int((f.after or "2023")[:4]) + 1 if f.after else 2023
    if f.before and year > int(f.before[:4]):
        year = int(f.before[:4])
    return f"{year}-04-10 24:00:00" if hour else f"{year}-02-30 10:00:00"


def shift(stamp: str, seconds: int) -> str:
    import datetime as dt

    t = parse_datetime(stamp) + dt.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%d %H:%M:%S")


def field_name(f: Field) -> str:
    return f.name
