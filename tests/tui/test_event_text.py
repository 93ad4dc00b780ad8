"""No event's text, wherever it is shown (the TUI's log, `staminad logs`, `run`'s progress), reads `None` or `()`."""

from __future__ import annotations

import types
import typing
from typing import Any

import msgspec
import pytest

from protocol import Event
from protocol.events import EVENT_KINDS, EventData
from staminad.commands.eventlines import describe_event
from staminad.commands.progress import Progress
from tui.board import describe

EMPTY: dict[object, object] = {str: "", int: 0, float: 0.0, bool: False}


def _empty(tp: object) -> object:
    """The empty value of a plain type or a tuple; a closed set's (a `Literal`, or a union of them) first word."""
    if typing.get_origin(tp) is tuple:
        return ()
    if typing.get_origin(tp) is typing.Literal:
        return typing.get_args(tp)[0]
    if typing.get_origin(tp) is typing.Union:
        return _empty(typing.get_args(tp)[0])
    return EMPTY[tp]


def _emptiest(kind: type[EventData]) -> EventData:
    """The event with every optional field None and every other one empty (zero, "", False)."""
    values: dict[str, Any] = {}
    for field in msgspec.structs.fields(kind):
        options = typing.get_args(field.type) if isinstance(field.type, types.UnionType) else (field.type,)
        values[field.encode_name] = None if type(None) in options else _empty(options[0])
    return kind(**values)


@pytest.mark.parametrize("kind", EVENT_KINDS, ids=lambda k: str(k.__struct_config__.tag))
def test_an_event_with_its_fields_absent_reads_without_none(kind: type[EventData]) -> None:
    """Absent or empty fields are left out of the line, not printed as `None`, `()` or `=None`."""
    event = Event(sweep="s", data=_emptiest(kind), at=0.0, seq=1)
    texts = [describe(event, None)[0], describe_event(event), Progress.line(event.data) or ""]
    for text in texts:
        assert "None" not in text and "()" not in text, text
