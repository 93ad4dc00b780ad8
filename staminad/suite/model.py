"""The shape of a generated suite: tests made of HTTP steps with declarative checks.

Tests are data, not code, so one suite can be run by the async runner, written out as a pytest
file for comparison, or stored with its results. Every test names the README rule it checks and
a failure category from the paper's taxonomy (appendix G.2, plus `business_logic` for guards and
effects, which the paper folds into other buckets, and `server_bad_response`, which only the runner
gives: an answer it cannot use, such as malformed HTTP or a body that is not JSON or nests too deep).
The categories are `protocol.kinds.Category`: the words an attempt's failure carries to the store and clients.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import msgspec

from protocol.kinds import Category

Method = Literal["GET", "POST", "PATCH", "DELETE"]
OK = (200, 201)
OK_OR_EMPTY = (200, 204)
REJECTED = (400, 422)
JSON_TYPE = "application/json"

# Marks a body key whose value is deliberately absent (the field is omitted), distinct from null.
JSONPath = tuple[str | int, ...]


class Equals(msgspec.Struct, frozen=True, tag="equals", omit_defaults=True):
    """The JSON value at `path` equals `value` (numbers compared up to float rounding).

    `rule` names the README rule this check pins when it is not its test's rule (a list field read
    back in an update test, an effect's result in an action test), so a failure cites the rule broken.
    """

    path: JSONPath
    value: Any
    rule: str = ""


class Absent(msgspec.Struct, frozen=True, tag="absent"):
    """The response object has no key `key`."""

    key: str


class IsInteger(msgspec.Struct, frozen=True, tag="integer"):
    """The JSON value at `path` is an integer, not a float."""

    path: JSONPath


class ListIds(msgspec.Struct, frozen=True, tag="list_ids"):
    """The response is a list of objects whose `id`s are exactly `ids` (any order)."""

    ids: tuple[str, ...]


Check = Equals | Absent | IsInteger | ListIds


class Step(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One HTTP request and what its response must satisfy; `why` explains the expectation."""

    method: Method
    path: str
    body: Any = None
    has_body: bool = False
    expect: tuple[int, ...] = OK
    checks: tuple[Check, ...] = ()
    why: str = ""
    action: bool = False  # an action call: a 404 where success is expected means a wrong endpoint
    # A raw step sends `raw` as the body byte for byte, with `content_type` as its Content-Type header
    # (None: no such header), instead of `json.dumps(body)` as JSON: malformed or non-object bodies,
    # non-standard number tokens, duplicate keys, a missing or wrong Content-Type, an empty body.
    raw: bytes | None = None
    content_type: str | None = JSON_TYPE


class Test(msgspec.Struct, frozen=True, kw_only=True):
    """A named scenario of steps run after `POST /reset`."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    name: str
    category: Category
    rule: str
    steps: tuple[Step, ...]
    classes: tuple[str, ...] = ()  # the input classes of `rule` it covers (`classes.CATALOGUE`)


class Suite(msgspec.Struct, frozen=True, kw_only=True):
    seed: int
    turn: int
    tests: tuple[Test, ...]


def req(method: Method, path: str, body: Any = msgspec.UNSET, **kw: Any) -> Step:
    """A step; `body` omitted means no request body at all."""
    if body is msgspec.UNSET:
        return Step(method=method, path=path, **kw)
    return Step(method=method, path=path, body=body, has_body=True, **kw)


def raw_req(method: Method, path: str, raw: bytes, content_type: str | None = JSON_TYPE, **kw: Any) -> Step:
    """A step whose body is `raw` exactly, sent with `content_type` (None: without a Content-Type header)."""
    return Step(method=method, path=path, raw=raw, content_type=content_type, **kw)
