"""Reading a server's JSON body: the nesting bound is exact for valid JSON, and every hostile body gets one reason."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from staminad.suite.jsonbody import MAX_DEPTH, Unusable, decode, nested_deeper_than
from staminad.suite.model import Check, Equals, IsInteger, ListIds
from staminad.suite.runner import QUOTED, check_failure

TRICKY = '[]{}"\\ab\u00e9'  # brackets, quotes and escapes inside strings, and a multi-byte character
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(alphabet=TRICKY, max_size=6),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(alphabet=TRICKY, max_size=3), kids, max_size=3),
    max_leaves=40,
)


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


def _wrapped(value: Any, levels: int) -> Any:
    for i in range(levels):
        value = [value, 1] if i % 2 else {"[": value, "}": "]]"}
    return value


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(value=VALUES, extra=st.integers(0, 70), limit=st.integers(0, 80))
def test_the_nesting_bound_is_exact_for_valid_json(value: Any, extra: int, limit: int) -> None:
    """For any valid JSON (brackets and quotes inside strings included) the bound says exactly depth > limit."""
    value = _wrapped(value, extra)
    raw = json.dumps(value, ensure_ascii=False).encode()
    assert nested_deeper_than(raw, limit) == (_depth(value) > limit)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"[" * 100_000 + b"]" * 100_000, f"nested deeper than {MAX_DEPTH} levels"),
        (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, f"nested deeper than {MAX_DEPTH} levels"),
        (b"[" * 100_000, f"nested deeper than {MAX_DEPTH} levels"),  # opened and never closed
        (b"[{" * 40 + b"}]" * 40, f"nested deeper than {MAX_DEPTH} levels"),  # 80 mixed levels
        (b"9" * 5000, "more than 1000 digits"),  # past Python's own 4,300-digit refusal (a ValueError)
        (b"[-" + b"1" * 1000 + b"]", "more than 1000 digits"),
        (b"\xff{}", "not UTF-8"),
        (b"\xef\xbb\xbf{}", "not JSON"),  # a byte order mark
        (b'"' + b'\\"' * 300_000, "not JSON"),  # an unterminated string of escapes: linear, not quadratic
        (b"[1,2", "not JSON"),
        (b"{'a': 1}", "not JSON"),
    ],
)
def test_a_hostile_body_is_unusable_with_one_short_reason(raw: bytes, says: str) -> None:
    """Deep nesting, endless integers, other encodings and broken syntax each raise Unusable, a short line."""
    with pytest.raises(Unusable, match=says) as caught:
        decode(raw)
    assert len(str(caught.value)) < 120


def test_what_json_loads_always_took_is_still_read() -> None:
    """NaN, Infinity, 1e999999, duplicate keys, escaped lone surrogates and 64 levels are read as before."""
    assert decode(b"") is None
    assert math.isnan(decode(b"NaN")) and decode(b"[Infinity, 1e999999]") == [math.inf, math.inf]
    assert decode(b'{"a": 1, "a": 2}') == {"a": 2}
    assert decode(b'"\\ud800"') == "\ud800"
    assert decode(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None
    assert decode(b"-" + b"9" * 999) == -int("9" * 999)


ANY_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**18, max_value=10**40)  # past 64 bits, where decoders differ first
    | st.floats()  # NaN and the infinities too: json.dumps writes them as NaN and Infinity
    | st.text(),  # any code point, lone surrogates included
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=4), kids, max_size=4),
    max_leaves=30,
)


def _same_reading(raw: bytes) -> None:
    """`decode(raw)` reads what `json.loads` with the integer bound reads, or refuses it likewise."""
    if not raw:
        assert decode(raw) is None  # an empty body is no document (a 204's)
        return
    try:
        expected = json.loads(raw.decode("utf-8"), parse_int=lambda text: int(text) if len(text) <= 1000 else 1 / 0)
    except (ValueError, ZeroDivisionError):
        with pytest.raises(Unusable):
            decode(raw)
        return
    assert repr(decode(raw)) == repr(expected)  # repr: NaN is not equal to itself, -0.0 equals 0.0


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(value=ANY_VALUES, ascii_only=st.booleans())
def test_the_fast_reader_reads_exactly_what_json_loads_reads(value: Any, ascii_only: bool) -> None:
    """Any JSON text (NaN, Infinity, big integers, lone surrogates, any escapes) decodes as json.loads reads it."""
    _same_reading(json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"))


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    text=st.text(alphabet='0123456789-+.eE[]{}",:tnulrfaINyNi \\t\n\u00e9', max_size=30)
    | st.sampled_from(["1e999", "-1e999", "[1e-999]", '"\\ud800"', "0" * 1000, "-" + "7" * 1000, "1" * 1001])
)
def test_the_fast_reader_refuses_and_reads_what_json_loads_does_on_broken_text(text: str) -> None:
    """Near-JSON text (numbers, literals, escapes cut anywhere) is read or refused exactly as json.loads does."""
    _same_reading(text.encode())


def test_checks_quote_a_servers_values_bounded_and_printable() -> None:
    """A huge value, a long id list, a lone surrogate and a 1,000-digit integer fail checks with short messages."""
    huge = list(range(100_000))
    cases: list[tuple[Check, Any]] = [
        (Equals(("a",), 1), {"a": huge}),
        (Equals(("a",), 1), {"a": 10**999}),  # too large for a float: compared without OverflowError
        (Equals(("a",), 1.5), {"a": -(10**999)}),
        (Equals(("a",), "x"), {"a": "\ud800" * 1000}),
        (IsInteger(("a",)), {"a": "\udfff"}),
        (ListIds(("1",)), [{"id": i} for i in huge]),
    ]
    for check, doc in cases:
        found = check_failure(check, doc)
        assert found is not None
        message = found[0]
        assert len(message) < 3 * QUOTED and message.encode("utf-8")  # no lone surrogate left to store
    assert check_failure(Equals(("a",), 10**999), {"a": 10**999}) is None
