"""Input classes a lenient parser or a set-minded store lets through, and what the README says of each.

`NaN`, `Infinity` and `-Infinity` are no JSON (Python's `json`, and so Flask and Starlette, parse them
anyway); a datetime is exactly `YYYY-MM-DD hh:mm:ss` (`strptime` also takes `2024-04-10 9:05:7`,
`fromisoformat` also takes fractional seconds); a list of references keeps a repeated id as sent and a
cascade drops every occurrence (a `set`, or `list.remove`, does not); a PATCH holding no current field
changes nothing and answers 200. `classes` lists them in the catalogue.
"""

from __future__ import annotations

from typing import Any

from staminad.bench.datetimes import unpadded_probe
from staminad.suite.data import scalar_body, stored, stored_checks
from staminad.suite.draws import ident
from staminad.suite.inputclass import Ctx, field_of, stored_back, target_of, victim_id
from staminad.suite.model import OK, OK_OR_EMPTY, REJECTED, Equals, Step, raw_req, req
from staminad.suite.rawbody import with_token

NON_FINITE = ("NaN", "Infinity", "-Infinity")
NO_SUCH_KEYS = ("no_such_field", "no_such_field_2")  # not fields: these are not vocabulary words


def make_non_finite(ctx: Ctx) -> list[Step]:
    """Each non-finite token in a POST and in a PATCH: rejected, nothing stored, nothing changed."""
    f, ep = field_of(ctx), ctx.entity.endpoint
    base = {**ctx.base, "id": f"{ctx.without['id']}-nf"}
    path = f"/{ep}/{base['id']}"
    steps = [*ctx.fix, req("POST", f"/{ep}", base, why=f"create a {ctx.entity.name} to PATCH")]
    for i, token in enumerate(NON_FINITE):
        oid = f"{ctx.without['id']}-nf{i}"
        body = with_token({**ctx.without, "id": oid}, f.name, token)
        why = f'`"{f.name}": {token}` is no JSON number (no JSON at all): rejected with 400 or 422'
        steps += [
            raw_req("POST", f"/{ep}", body, expect=REJECTED, why=why),
            req("GET", f"/{ep}/{oid}", expect=(404,), why="a rejected POST stores nothing"),
            raw_req("PATCH", path, with_token({}, f.name, token), expect=REJECTED, why=why),
        ]
    kept = stored_checks(stored(ctx.state, ctx.entity, base))
    return [*steps, req("GET", path, checks=kept, why="a rejected PATCH changes nothing")]


def near_misses(after: str | None, before: str | None, valid: str) -> list[tuple[str, str]]:
    """(value, what is wrong with it) of datetimes one slip away from the format."""
    out = [(f"{valid}.000", "fractional seconds"), (f" {valid}", "a leading space"), (f"{valid} ", "a trailing space")]
    probe = unpadded_probe(after, before)
    if probe is not None:
        out.insert(0, (probe[:-2] + probe[-1], "seconds without their leading zero"))
    return out


def make_near_miss(ctx: Ctx) -> list[Step]:
    f, ep = field_of(ctx), ctx.entity.endpoint
    valid = str(ctx.base[f.name]) if isinstance(ctx.base.get(f.name), str) else unpadded_probe(f.after, f.before)
    steps = list(ctx.fix)
    for i, (value, what) in enumerate(near_misses(f.after, f.before, valid or "2024-04-10 09:05:07")):
        oid = f"{ctx.without['id']}-nm{i}"
        why = f"{value!r} ({what}) is not `YYYY-MM-DD hh:mm:ss`: rejected with 400 or 422"
        steps += [
            req("POST", f"/{ep}", {**ctx.without, "id": oid, f.name: value}, expect=REJECTED, why=why),
            req("GET", f"/{ep}/{oid}", expect=(404,), why="a rejected POST stores nothing"),
        ]
    return steps


def make_repeated_ids(ctx: Ctx) -> list[Step]:
    """A list holding one id twice (and another between): stored and read back as sent."""
    f = field_of(ctx)
    v = victim_id(ctx)
    others = [i for i in ctx.base[f.name] if i != v]
    return stored_back(ctx, [v, *others, v], f"{f.name} keeps a repeated id as sent, in order")


def make_cascade_repeats(ctx: Ctx) -> list[Step]:
    """Deleting the target of a repeated id drops every occurrence, the other ids kept in order."""
    f, t, ep = field_of(ctx), target_of(ctx), ctx.entity.endpoint
    v = victim_id(ctx)
    others = [i for i in ctx.base[f.name] if i != v]
    oid = ctx.without["id"]
    left = (Equals((f.name,), others),)
    return [
        *ctx.fix,
        req("POST", f"/{ep}", {**ctx.without, f.name: [v, *others, v]}, expect=OK, why="a list with a repeated id"),
        req("DELETE", f"/{t.endpoint}/{v}", expect=OK_OR_EMPTY, why=f"delete the {t.name} {v}"),
        req("GET", f"/{ep}/{oid}", checks=left, why=f"deleting {v} drops every occurrence of it from {f.name}"),
    ]


def make_patch_no_field(ctx: Ctx) -> list[Step]:
    """PATCH `{}` and PATCH holding only an unknown key: 200, the entity as it was."""
    e, ep = ctx.entity, ctx.entity.endpoint
    body = scalar_body(ctx.rng, ctx.state, e, ident(ctx.rng, f"{ep}-nofield"))
    path = f"/{ep}/{body['id']}"
    same = stored_checks(stored(ctx.state, e, body))
    unknown: dict[str, Any] = {next(k for k in NO_SUCH_KEYS if e.field(k) is None): 1}
    return [
        req("POST", f"/{ep}", body),
        req("PATCH", path, {}, expect=(200,), checks=same, why="a PATCH of `{}` changes nothing and answers 200"),
        req("PATCH", path, unknown, expect=(200,), checks=same, why="a PATCH of only an unknown key changes nothing"),
        req("GET", path, checks=same, why="the entity is as it was"),
    ]
