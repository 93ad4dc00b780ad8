"""The in-container launcher's requests, built on the host as Structs, each typed with the answer it gets.

The launcher (`launcher.py`, and `streamlauncher.py` over an exec stream) reads each request as one JSON object
`{"op": ..., "args": {...}}` and stays stdlib-only, so the wire does not change: `wire` turns a request into
that operation's name and its `args`. On the host a request is a `Request[A]`, `A` being the `replies`
Struct its operation answers with, so `_op(IsAlive(pgid=1))` is known to mypy to answer `Alive`, and a
request with a missing or misspelt argument is a type error, never a `KeyError` inside the container.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar, Generic, get_args

import msgspec

from staminad.sandbox.docker.replies import (
    A,
    Absent,
    Alive,
    Done,
    Ended,
    JobFiles,
    Listeners,
    Loc,
    Owner,
    Pong,
    Stopped,
    Text,
    Usage,
    Waited,
)


class Request(msgspec.Struct, Generic[A], frozen=True, forbid_unknown_fields=True):
    """One operation of the launcher: its `op` name, its arguments as fields, its answer as the type argument."""

    op: ClassVar[str]


# --- the launcher's own operations (`launcher.run_op`, both ways in) -----------------------------------


class Spawn(Request[Done], frozen=True):
    """`spawn`: run `argv` detached, in a session of its own (the wrapper, the server launcher); no answer."""

    op = "spawn"
    argv: tuple[str, ...]


class IsAlive(Request[Alive], frozen=True):
    """`alive`: whether the process group `pgid` exists."""

    op = "alive"
    pgid: int


class Kill(Request[Done], frozen=True):
    """`kill`: SIGKILL the process group `pgid`."""

    op = "kill"
    pgid: int


class FindListeners(Request[Listeners], frozen=True):
    """`listeners`: the listening sockets on `port` and who holds them, read as the agent (`as_`, "uid:gid")."""

    op = "listeners"
    port: int
    leader: int
    as_: str = msgspec.field(name="as")


class StopServer(Request[Stopped], frozen=True, omit_defaults=True):
    """`stop`: TERM then KILL the server's group, then whatever holds `port`; with `uid` (0: sent none), the
    agent's processes too, as `EndAgent` does."""

    op = "stop"
    pgid: int
    port: int
    as_: str = msgspec.field(name="as")
    uid: int = 0


class Ping(Request[Pong], frozen=True):
    """`ping`: the launcher's pid."""

    op = "ping"


class MeasureUsage(Request[Usage], frozen=True):
    """`usage`: the disk the tree at `path` takes, walked as the agent (`as_`)."""

    op = "usage"
    path: str
    as_: str = msgspec.field(name="as")


class EndAgent(Request[Ended], frozen=True):
    """`end_agent`: end every process of the user `uid`."""

    op = "end_agent"
    uid: int


# --- a volume sandbox's operations (`streamlauncher`, over an exec stream) -----------------------------


class ReadJob(Request[JobFiles], frozen=True):
    """`state`: whether the job was written, its wrapper's pid and its marker."""

    op = "state"
    job: str


class WaitMarker(Request[Waited], frozen=True):
    """`wait`: the job's marker once it comes, or none after `timeout` seconds."""

    op = "wait"
    job: str
    timeout: float


class ReadFile(Request[Text], frozen=True):
    """`read`: at most `limit` characters of a control file, its head (or with `tail`, its end)."""

    op = "read"
    path: str
    limit: int
    tail: bool


class WriteFile(Request[Done], frozen=True):
    """`write`: `text` into a root-owned file at `path` below `under` ("control" or "prompts"), with `mode`."""

    op = "write"
    under: str
    path: str
    text: str
    mode: int


class FindAbsent(Request[Absent], frozen=True):
    """`absent`: which of `names` are not in the workspace, looked up as the agent (`as_`)."""

    op = "absent"
    names: tuple[str, ...]
    as_: str = msgspec.field(name="as")


class ReadOwner(Request[Owner], frozen=True):
    """`owner`: who owns the workspace's root."""

    op = "owner"


class CountLoc(Request[Loc], frozen=True):
    """`loc`: the workspace's lines of code, counted as the agent (`as_`)."""

    op = "loc"
    as_: str = msgspec.field(name="as")


class RemoveFile(Request[Done], frozen=True):
    """`remove`: the control file at `path`, if it is there."""

    op = "remove"
    path: str


def wire(request: Request[Any]) -> tuple[str, dict[str, Any]]:
    """The operation's name and its `args`, as the launcher reads them (`{"op": name, "args": args}`)."""
    args: dict[str, Any] = msgspec.to_builtins(request)
    return request.op, args


@functools.cache
def answer_type(kind: type[Request[Any]]) -> type[msgspec.Struct]:
    """The Struct a request class's operation answers with: its type argument (`IsAlive(Request[Alive])`)."""
    for base in getattr(kind, "__orig_bases__", ()):
        found = get_args(base)
        if found and isinstance(found[0], type) and issubclass(found[0], msgspec.Struct):
            return found[0]
    raise TypeError(f"{kind.__name__} names no answer: declare it as Request[<a replies Struct>]")


def answer_of(request: Request[A]) -> type[A]:
    """The Struct `request`'s operation answers with (its class's type argument)."""
    found: type[A] = answer_type(type(request))  # type: ignore[assignment]  # the class's own type argument
    return found


__all__ = [
    "CountLoc",
    "EndAgent",
    "FindAbsent",
    "FindListeners",
    "IsAlive",
    "Kill",
    "MeasureUsage",
    "Ping",
    "ReadFile",
    "ReadJob",
    "ReadOwner",
    "RemoveFile",
    "Request",
    "Spawn",
    "StopServer",
    "WaitMarker",
    "WriteFile",
    "answer_of",
    "answer_type",
    "wire",
]
