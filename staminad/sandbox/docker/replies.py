"""The in-container launcher's answers, decoded on the host into Structs (the launcher itself stays stdlib-only).

The launcher (`launcher.py`, and `streamlauncher.py` over an exec stream) answers each request with one JSON object:
`{"ok": {...}}` with the operation's answer, or `{"error": "..."}` (a streamed one also repeats the request's
`id`; a failure for want of a resource of the container says `"inside": true`). `decode` reads it as the `Struct`
the operation answers with, so the host reads fields, never keys, and an answer of the wrong shape is a
`SandboxError` (`engine_error`) naming the operation, never a `KeyError` later; a failure inside is an
`InsideFailure`, judged by whose processes hold the container before it is blamed.
The requests are typed the same way, each with the answer it gets (`requests`).
"""

from __future__ import annotations

from typing import Generic, TypeVar

import msgspec

from staminad.sandbox.base import InsideFailure, SandboxError

NOTHING = b'{"ok": {}}'  # the answer of an operation that answers nothing, for a way in that writes none


class Done(msgspec.Struct, frozen=True):
    """An operation that answers nothing (`spawn`, `kill`, `write`, `remove`)."""


class Alive(msgspec.Struct, frozen=True):
    """`alive`: whether the process group exists."""

    alive: bool


class Ended(msgspec.Struct, frozen=True):
    """`end_agent`: how many of the agent's processes were ended, and how many were left at the bound."""

    ended: int
    left: int = 0


class Holder(msgspec.Struct, frozen=True):
    """A process holding the server port: its pid, process group, start (clock ticks) and command line."""

    pid: int
    pgid: int
    start: int
    cmd: str


class Listeners(msgspec.Struct, frozen=True):
    """`listeners`: the listening sockets on the port, those no readable process holds (`unseen`), the first
    holders, and the start of the server's leader (None: gone)."""

    sockets: int = 0
    unseen: int = 0
    holders: tuple[Holder, ...] = ()
    leader_start: int | None = None


class Stopped(msgspec.Struct, frozen=True):
    """`stop`: the sockets still on the port at the bound, and (with a uid) the agent's processes ended."""

    sockets: int = 0
    ended: int = 0
    left: int = 0


class Usage(msgspec.Struct, frozen=True):
    """`usage`: the kibibytes a tree takes (`partial`: the walk stopped at its bound)."""

    kb: int = 0
    partial: bool = False


class Pong(msgspec.Struct, frozen=True):
    """`ping`: the launcher's pid."""

    pid: int


class Owner(msgspec.Struct, frozen=True):
    """`owner`: who owns the workspace's root."""

    uid: int


class Text(msgspec.Struct, frozen=True):
    """`read`: a control file's text (its head or tail), None when there is no such file."""

    text: str | None


class JobFiles(msgspec.Struct, frozen=True):
    """`state`: whether a job was written, its wrapper's pid as written (None: not started) and its marker as
    parsed JSON (`markers.check_marker` judges it), None when there is none yet."""

    written: bool
    pid: str | None = None
    marker: dict[str, object] | None = None


class Waited(msgspec.Struct, frozen=True):
    """`wait`: the job's marker when it came or the wait ended (None: none yet)."""

    marker: dict[str, object] | None = None


class Absent(msgspec.Struct, frozen=True):
    """`absent`: the names not in the workspace (None: the agent's processes spoiled the look)."""

    absent: tuple[str, ...] | None = None
    interfered: str = ""  # why the agent's processes spoiled the check run as the agent ("" when they did not)


class Loc(msgspec.Struct, frozen=True):
    """`loc`: the workspace's lines of code (None: the agent's processes spoiled the count, `interfered` says how)."""

    loc: int | None = None
    interfered: str = ""  # why the agent's processes spoiled the check run as the agent ("" when they did not)


A = TypeVar("A", bound=msgspec.Struct)  # the Struct an operation answers with


class _Envelope(msgspec.Struct, Generic[A], frozen=True):
    ok: A | None = None
    error: str | None = None
    id: str = ""
    inside: bool = False  # the failure was for want of a resource of the container (see `InsideFailure`)


class Tagged(msgspec.Struct, frozen=True):
    """Only a streamed answer's `id`, read first to find the answer to a request among others."""

    id: str = ""


def decode(raw: bytes | str, answer: type[A], op: str) -> A:
    """The launcher's answer `raw` to `op` as `answer`; a SandboxError (`engine_error`) when it failed or is not one."""
    try:
        # mypy takes no variable as a type argument; msgspec builds the decoder for the Struct it is given here.
        found = msgspec.json.decode(raw, type=_Envelope[answer])  # type: ignore[valid-type]
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise SandboxError(f"unreadable launcher answer to {op}: {exc}", "engine_error") from None
    if found.ok is None:
        message = f"the sandbox launcher failed {op}: {str(found.error)[:300]}"
        if found.inside:
            raise InsideFailure(message)
        raise SandboxError(message, "engine_error")
    return found.ok


__all__ = [
    "NOTHING",
    "Absent",
    "Alive",
    "Done",
    "Ended",
    "Holder",
    "JobFiles",
    "Listeners",
    "Loc",
    "Owner",
    "Pong",
    "Stopped",
    "Tagged",
    "Text",
    "Usage",
    "Waited",
    "decode",
]
