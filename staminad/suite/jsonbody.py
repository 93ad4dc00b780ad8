"""Reading an agent server's JSON answer, whatever bytes it sent: a document, or one short reason why not.

The body comes from the agent's code, so nothing about it is trusted but its size (the transport caps
that). The decoder and the checks after it are recursive (the C scanner, `==` on nested values,
`str`, `json.dumps`), so nesting is bounded BEFORE anything recursive sees the body: a body valid
JSON 100,000 levels deep would otherwise raise RecursionError out of the suite. Numbers are bounded
too (an integer of a million digits costs seconds to convert; Python refuses some with ValueError).
What is accepted stays as lenient as `json.loads` always was here: NaN and Infinity, `1e999`
(infinite), duplicate keys (the last wins), escaped lone surrogates. Only UTF-8 is read (RFC 8259
section 8.1): the nesting scan reads bytes, which is exact for UTF-8 alone.

Most answers are read by msgspec's decoder, several times faster than `json.loads` (a suite reads thousands of
them, and every microsecond of ours is wall time the server waits). It refuses all that `json.loads` refuses
and some of what it reads (NaN, Infinity, `1e999`, lone surrogates); any body it refuses, and any that holds a
run of MAX_DIGITS digits (only such a body can hold an integer past the bound), is read again by `json.loads`
with the integer bound, so what is read and every reason given are exactly as before. A differential test
holds the two readers to the same documents.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

MAX_DEPTH = 64  # arrays and objects inside each other; a test response needs a handful
MAX_DIGITS = 1000  # digits of one integer (a sign included)

# A JSON string, or an unterminated one to the end of the body: every `"` starts a match and no match
# backtracks, so stripping strings is linear however hostile the escapes.
_STRING = re.compile(rb'"[^"\\]*(?:\\[\s\S]?[^"\\]*)*(?:"|\Z)')
_SAME = bytes.maketrans(b"{}", b"[]")  # objects and arrays nest alike
_NOT_BRACKET = bytes(sorted(set(range(256)) - set(b"[]{}")))
_FAST = msgspec.json.Decoder()
_LONG_RUN = re.compile(rb"[0-9]{%d}" % MAX_DIGITS)  # no shorter run of digits holds an integer past the bound


class Unusable(ValueError):
    """The body cannot be used as a JSON document; `str()` says why in one short line."""


def nested_deeper_than(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON text `raw` nests arrays and objects more than `limit` deep, linear in its size.

    Exact for valid JSON. For invalid JSON it may also say True (an opening run deeper than `limit`
    that never closes), never False where a decoder would recurse deeper than `limit` before failing.
    Removing every innermost `[]` pair takes one level off every nest, so the passes until nothing is
    left are the depth; a pass lowers any point's depth by one at most, so `passes + opens left`
    bounds it from above at every pass.
    """
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False  # most bodies: too few brackets to nest that deep
    # Without an escaped quote every `"` opens or closes a string, so splitting at them leaves the text between
    # strings at C speed; the regex, which also reads escapes, costs a few times more on a typical list.
    outside = b"".join(raw.split(b'"')[::2]) if b'\\"' not in raw else _STRING.sub(b"", raw)
    marks = outside.translate(_SAME, _NOT_BRACKET)
    if b"[" * (limit + 1) in marks:
        return True  # the hostile case, found without a pass
    for passes in range(limit + 1):
        if marks.count(b"[") + passes <= limit:
            return False
        inner = marks.replace(b"[]", b"")
        if inner == marks:
            return True  # unbalanced: not JSON, and opening deeper than the limit before it fails
        marks = inner
    return True


def screen(raw: bytes) -> None:
    """`Unusable` when `raw` nests deeper than MAX_DEPTH: a bound every answer keeps, like its size cap, whether
    or not a test reads its body (no answer that deep is one a test could use: the runner fails it wherever
    it comes, rather than reading its status as if the rest were fine)."""
    if nested_deeper_than(raw):
        raise Unusable(f"the body is nested deeper than {MAX_DEPTH} levels")


def _integer(text: str) -> int:
    if len(text) > MAX_DIGITS:
        raise Unusable(f"the JSON body holds an integer of more than {MAX_DIGITS} digits")
    return int(text)


def decode(raw: bytes) -> Any:
    """The JSON document `raw` holds (None for an empty body); `Unusable` saying why it cannot be used."""
    if not raw:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unusable(f"the body is not UTF-8 (byte {exc.start})") from None
    screen(raw)
    if len(raw) < MAX_DIGITS or not _LONG_RUN.search(raw):
        try:
            return _FAST.decode(raw)
        except msgspec.DecodeError:
            pass  # NaN, Infinity, 1e999, lone surrogates, or not JSON: json.loads reads it or says why
    try:
        return json.loads(text, parse_int=_integer)
    except json.JSONDecodeError as exc:
        raise Unusable(f"the body is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None


__all__ = ["MAX_DEPTH", "MAX_DIGITS", "Unusable", "decode", "nested_deeper_than", "screen"]
