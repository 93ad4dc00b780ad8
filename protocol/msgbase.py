"""The base of every message: the tagged Struct with its request number, and a request typed by its reply."""

from __future__ import annotations

from typing import Generic, TypeVar

import msgspec


class Msg(msgspec.Struct, frozen=True, tag_field="type", forbid_unknown_fields=True, kw_only=True):
    rid: int = 0  # the request's number, repeated by its reply; 0 on events and unnumbered requests


R_co = TypeVar("R_co", bound=Msg, covariant=True)  # a request for an Ok is a request for an Ok or a SweepInfo


class RequestFor(Msg, Generic[R_co], frozen=True):
    """A request whose answer is an `R_co` (or an `ErrorReply`): `Client.request` returns that type, checked."""


class RequestId(msgspec.Struct):
    """Only a message's `rid`, read leniently, so a request that fails to decode still gets its reply matched."""

    rid: int = 0
