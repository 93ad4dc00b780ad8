"""The data shapes action and analytics tests are built from: nulls, falsy values, empty lists, bounds, signs."""

from __future__ import annotations

import asyncio
import random

import msgspec

from staminad.bench.schema import (
    Action,
    Analytics,
    ArithOperand,
    Compare,
    Compute,
    Entity,
    EnumType,
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
from staminad.reference.server import App
from staminad.suite.actions import action_tests
from staminad.suite.aggregates import aggregate, analytics_tests, signed_value
from staminad.suite.effectdata import meet_effects
from staminad.suite.inprocess import AppTransport
from staminad.suite.model import Suite, Test
from staminad.suite.plans import NULL, Plan, can_be_null, falsy_value, shape
from staminad.suite.runner import run_suite

ITEM = Entity(
    name="Item",
    fields=(
        Field(name="price", kind="integer", nullable=True, minimum=0, maximum=100),
        Field(name="label", kind="string"),
    ),
)
ORDER = Entity(
    name="Order",
    fields=(
        Field(name="status", kind="enum", enum="OrderStatus", required=True),
        Field(name="qty", kind="integer", nullable=True, maximum=10),
        Field(name="rate", kind="float", minimum=0.0, maximum=5.0),
        Field(name="total", kind="float", minimum=0.0, maximum=50.0),
        Field(name="stock", kind="integer"),
        Field(name="note", kind="string", required=True, has_default=True, default="n/a"),
        Field(name="flag", kind="boolean", nullable=True),
        Field(name="items", kind="ref_list", target="Item"),
        Field(name="main", kind="ref", target="Item", nullable=True),
    ),
)
STATE = State(enums=(EnumType(name="OrderStatus", values=("open", "closed")),), entities=(ITEM, ORDER))


def _field(e: Entity, name: str) -> Field:
    f = e.field(name)
    assert f is not None
    return f


def _plan() -> Plan:
    return Plan({"id": "o1", "status": "open", "qty": 3, "rate": 1.5, "total": 2.0, "stock": 4, "flag": True})


def test_null_and_falsy_values_follow_the_field_flags() -> None:
    """A field can read as null when nullable or optional without default; falsy values respect bounds."""
    assert can_be_null(_field(ORDER, "qty")) and can_be_null(_field(ORDER, "stock"))
    assert not can_be_null(_field(ORDER, "note")) and not can_be_null(_field(ORDER, "items"))
    assert falsy_value(STATE, _field(ORDER, "flag")) is False
    assert falsy_value(STATE, _field(ORDER, "qty")) == 0
    assert falsy_value(STATE, Field(name="n", kind="integer", minimum=1)) is None
    assert falsy_value(STATE, Field(name="s", kind="string", min_length=2)) is None


def test_guards_are_failed_by_nulls_and_met_or_failed_by_empty_lists() -> None:
    """The null variant nulls a comparison's operand; empty lists make `all` hold and `any` fail."""
    rng = random.Random(1)
    plan = _plan()
    assert shape(rng, STATE, ORDER, plan, Compare(FieldOperand("qty"), "!=", 3), False, "null")
    assert plan.body["qty"] is None
    plan = _plan()
    assert shape(rng, STATE, ORDER, plan, Compare(ArithOperand("qty", "+", "stock"), ">", -5), False, "null")
    assert plan.body["qty"] is None or "stock" not in plan.body
    for quantifier, want in (("all", True), ("any", False)):
        plan = _plan()
        cond = Quantified(quantifier, "items", "price", ">", 10)  # type: ignore[arg-type]
        assert shape(rng, STATE, ORDER, plan, cond, want, "empty") and plan.body["items"] == []
        assert not shape(rng, STATE, ORDER, _plan(), cond, not want, "empty")
    plan = _plan()
    assert shape(rng, STATE, ORDER, plan, Quantified("any", "items", "price", ">", 10), False, "null")
    assert [b.get("price") for _, b in plan.related] == [None]
    plan = _plan()
    assert shape(rng, STATE, ORDER, plan, Compare(SumOperand("items", "price"), ">=", 0), True, "empty")
    assert not shape(rng, STATE, ORDER, _plan(), Compare(SumOperand("items", "price"), ">", 0), True, "empty")


def test_null_checks_are_met_with_falsy_values_and_all_fails_on_its_second_entity() -> None:
    """`is not null` holds with false/0; an unmet `all` puts the failing entity second."""
    rng = random.Random(2)
    plan = _plan()
    assert shape(rng, STATE, ORDER, plan, NullCheck("flag", False), True)
    assert plan.body["flag"] is False
    plan = _plan()
    assert shape(rng, STATE, ORDER, plan, Quantified("all", "items", "price", ">", 10), False)
    prices = [b["price"] for _, b in plan.related]
    assert prices[0] > 10 >= prices[1]


def test_effect_data_sits_on_bounds_nulls_and_missing_targets() -> None:
    """Effect data sits on bounds, nulls, null operands and missing targets, one data mode each."""
    action = Action(
        entity="Order",
        name="ship",
        field="status",
        sources=("open",),
        target="closed",
        effects=(
            Increment("qty", 2),
            Increment("stock", -1),
            Compute("total", "rate", "*", "qty"),
            OnReference("main", Increment("price", 5)),
            ForEach("items", SetValue("label", "done")),
        ),
    )
    rng = random.Random(3)
    plan = _plan()
    assert meet_effects(rng, STATE, ORDER, action, plan, set(), "bounds")
    assert plan.body["stock"] == 0 and not 0.0 <= plan.body["rate"] * plan.body["qty"] <= 50.0
    main = next(b for _, b in plan.related if b["id"] == plan.body["main"])
    assert main["price"] == 100
    assert all(b["label"] != "done" for _, b in plan.related if b["id"] in plan.body["items"])
    assert len(plan.body["items"]) == 2
    plan = _plan()
    assert meet_effects(rng, STATE, ORDER, action, plan, set(), "nulls")
    assert plan.body["qty"] is None and "stock" not in plan.body
    assert [b.get("price", NULL) for _, b in plan.related if b["id"] == plan.body["main"]] == [None]
    plan = _plan()
    assert meet_effects(rng, STATE, ORDER, action, plan, set(), "null_operands")
    assert "rate" not in plan.body and plan.body["total"] == 2.0 and plan.body["qty"] == 3
    plan = _plan()
    assert meet_effects(rng, STATE, ORDER, action, plan, set(), "empty")
    assert plan.body["main"] is None and plan.body["items"] == []


def test_aggregate_data_has_signs_and_nulls_that_show_null_as_zero() -> None:
    """min data is positive, max data negative where allowed, each with one null that must be skipped."""
    rng = random.Random(4)
    f = Field(name="v", kind="integer", nullable=True)
    assert all(signed_value(rng, f, 1) > 0 and signed_value(rng, f, -1) < 0 for _ in range(50))  # type: ignore[operator]
    assert signed_value(rng, Field(name="w", kind="integer", minimum=0), -1) is None
    assert aggregate("sum", [None], 1) == 0 and aggregate("max", [None], 1) is None
    e = Entity(name="Reading", fields=(f,))
    st = State(entities=(e,), analytics=(Analytics(entity="Reading", op="max", field="v"),))
    tests = analytics_tests(st, st.analytics[0], rng)
    many = next(t for t in tests if t[0].endswith("_many"))
    values = [s.body.get("v", None) for s in many[3] if s.method == "POST"]
    assert values[-1] is None and all(v < 0 for v in values[:-1])


def test_action_tests_cover_null_and_empty_cases_and_the_reference_passes_them() -> None:
    """A guarded action gets null, empty and effect-mode tests, and the reference server passes all of them."""
    action = Action(
        entity="Order",
        name="ship",
        field="status",
        sources=("open",),
        target="closed",
        conditions=(Compare(FieldOperand("qty"), "<", 5), Quantified("all", "items", "price", ">", 10)),
        effects=(Increment("stock", -1), OnReference("main", Increment("price", 5))),
    )
    st = msgspec.structs.replace(STATE, actions=(action,))
    made = action_tests(st, action, random.Random(5))
    names = {name for name, _, _, _, _ in made}
    assert {
        "order_ship_guard_1_null",
        "order_ship_guard_2_null",
        "order_ship_guard_2_empty",
        "order_ship_succeeds",
        "order_ship_succeeds_null_inputs",
        "order_ship_succeeds_no_targets",
        "order_ship_wrong_state",
    } <= names
    suite = Suite(
        seed=0,
        turn=0,
        tests=tuple(
            Test(name=n, category=c, rule=r, steps=tuple(s))  # type: ignore[arg-type]
            for n, c, r, s, _ in made
        ),
    )
    ok = asyncio.run(run_suite(suite, AppTransport(App({"schema": msgspec.to_builtins(st)}))))
    assert ok.passed, ok.failures
    bad = asyncio.run(
        run_suite(suite, AppTransport(App({"schema": msgspec.to_builtins(st), "bugs": ["null-as-zero-order"]})))
    )
    assert [r.name for r in bad.failures] == ["order_ship_guard_1_null"]


def test_a_set_on_a_guarded_field_starts_from_another_value_the_guards_allow() -> None:
    """bounds: `set this.flag to false` under `this.flag is not null` starts from true, not the guard's falsy pick."""
    action = Action(
        entity="Order",
        name="ship",
        field="status",
        sources=("open",),
        target="closed",
        conditions=(NullCheck("flag", False),),
        effects=(SetValue("flag", False),),
    )
    for seed in range(5):
        rng = random.Random(seed)
        plan = _plan()
        assert shape(rng, STATE, ORDER, plan, action.conditions[0], True) and plan.body["flag"] is False
        assert meet_effects(rng, STATE, ORDER, action, plan, {"flag"}, "bounds")
        assert plan.body["flag"] is True
    pinned = Action(
        entity="Order",
        name="ship",
        field="status",
        sources=("open",),
        target="closed",
        conditions=(Compare(FieldOperand("flag"), "==", False),),
        effects=(SetValue("flag", False),),
    )
    plan = Plan({**_plan().body, "flag": False})
    assert not meet_effects(random.Random(0), STATE, ORDER, pinned, plan, {"flag"}, "bounds")
    assert plan.body["flag"] is False
