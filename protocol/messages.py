"""The messages: frozen msgspec Structs in one tagged union, unknown fields refused.

A connection opens with `Hello` (the client's protocol version) answered by `HelloReply`; then each
request gets exactly one reply (`Ok`, `ErrorReply` or a typed answer), and a `Subscribe` turns the
connection into a stream of `Event`s. Every message carries `rid`: a client numbers its requests and
the reply repeats the number, so a reply left over from a request the client gave up on (cancelled,
timed out) is recognised and skipped, never taken as the answer to a later one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeGuard, TypeVar, get_args

import msgspec

from protocol.events import EventData, kind_of
from protocol.msgbase import Msg as _Msg
from protocol.msgbase import RequestFor, RequestId
from protocol.replies import (
    HISTORY_END,
    AttemptSummary,
    AttemptTexts,
    BoxSample,
    CodeChange,
    ConfigStatus,
    DiskUsage,
    EngineInfo,
    ErrorReply,
    FailedTest,
    FileChange,
    GpuInfo,
    Ok,
    OpsEndpoint,
    OpsPoint,
    OpsReport,
    OpsSweep,
    SandboxInfo,
    ScenarioInfo,
    ScenarioList,
    ScenarioRow,
    SweepInfo,
    SweepList,
    TranscriptItem,
)

PROTOCOL_VERSION = 11  # 4: typed events; 5: SweepInfo.reason, ErrorReply.usage; 6: GetOps; 7: ConfigStatus counts;
# 8: GetCodeChange; 9: failure categories as a tuple of words (AttemptTested, AttemptSummary);
# 10: EngineInfo.down_since and waiting (engine outages), OpsReport.orphans (orphaned sandboxes); 11: SweepInfo.waiting


class Hello(RequestFor["HelloReply"], tag="hello", frozen=True):
    version: int
    client: str = ""


class HelloReply(_Msg, tag="hello_reply", frozen=True):
    version: int
    daemon: str


class Submit(RequestFor["Ok"], tag="submit", frozen=True):
    """A sweep file's TOML text; `base_dir` resolves relative pack paths, `source` names the file in errors.

    `force_new` replaces a stored sweep of the same name whose configuration differs; `paused` queues
    the sweep paused, so that nothing of it runs before a `Resume`.
    """

    sweep_toml: str
    base_dir: str = ""
    source: str = ""
    force_new: bool = False
    paused: bool = False


class ListSweeps(RequestFor["SweepList"], tag="list", frozen=True):
    pass


class GetSweep(RequestFor["SweepInfo"], tag="get", frozen=True):
    sweep: str


class GetScenario(RequestFor["ScenarioInfo"], tag="get_scenario", frozen=True):
    """One scenario's attempt timeline: `configuration` and `seed` pick it within the sweep."""

    sweep: str
    configuration: str
    seed: int


class GetAttempt(RequestFor["AttemptTexts"], tag="get_attempt", frozen=True):
    """An attempt's texts: the prompt it got, the feedback it produced, its failing tests."""

    attempt_id: int


class GetCodeChange(RequestFor["CodeChange"], tag="get_code_change", frozen=True):
    """The agent's code change up to an attempt: its workspace against the attempt kept before it."""

    attempt_id: int


class ListScenarios(RequestFor["ScenarioList"], tag="list_scenarios", frozen=True):
    """Every scenario of a sweep with where it stands now (the TUI's sweep view)."""

    sweep: str


class RetryScenario(RequestFor["Ok"], tag="retry_scenario", frozen=True):
    """Give a scenario that used up its infra retries another round of them, and run it again."""

    sweep: str
    configuration: str
    seed: int


class Cancel(RequestFor["Ok"], tag="cancel", frozen=True):
    sweep: str


class Pause(RequestFor["Ok"], tag="pause", frozen=True):
    sweep: str


class Resume(RequestFor["Ok"], tag="resume", frozen=True):
    sweep: str


class Stop(RequestFor["Ok"], tag="stop", frozen=True):
    drain: bool = False


class Ping(RequestFor["Ok"], tag="ping", frozen=True):
    """Answered with `Ok`: keeps an otherwise idle request connection inside the daemon's idle timeout."""


class Subscribe(RequestFor["Ok"], tag="subscribe", frozen=True):
    """Events of the named sweeps (all when empty) and kinds (all when empty).

    `replay` first sends up to that many of the daemon's most recent matching events, oldest first,
    then the live stream with no gap between them.
    """

    sweeps: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    replay: int = 0


class GetOps(RequestFor["OpsReport"], tag="get_ops", frozen=True):
    """The box at a glance (`OpsReport`): sweeps, engines, endpoints, load, memory, disks, GPUs, and up to
    `history` of the daemon's recent samples of them (oldest first)."""

    history: int = 360


class Event(_Msg, tag="event", frozen=True):
    """One thing that happened in a sweep: `data` is one of the typed kinds in `protocol.events`."""

    sweep: str
    data: EventData
    at: float
    seq: int

    @property
    def kind(self) -> str:
        return kind_of(self.data)


Request = (
    Hello
    | Ping
    | GetOps
    | Submit
    | ListSweeps
    | GetSweep
    | ListScenarios
    | GetScenario
    | GetAttempt
    | GetCodeChange
    | RetryScenario
    | Cancel
    | Pause
    | Resume
    | Stop
    | Subscribe
)


def reply_type(request: type[RequestFor[Any]]) -> type[_Msg]:
    """The reply type `request` is answered with (besides `ErrorReply`), from its declaration."""
    return _REPLY_TYPES[request]


def _declared_reply(request: type[RequestFor[Any]]) -> type[_Msg]:
    (base,) = (b for b in request.__orig_bases__ if getattr(b, "__origin__", None) is RequestFor)  # type: ignore[attr-defined]
    (arg,) = get_args(base)
    found = globals()[arg.__forward_arg__] if hasattr(arg, "__forward_arg__") else arg
    assert isinstance(found, type) and issubclass(found, _Msg)
    return found


_REPLY_TYPES: dict[type[RequestFor[Any]], type[_Msg]] = {r: _declared_reply(r) for r in get_args(Request)}

Reply = (
    HelloReply
    | Ok
    | ErrorReply
    | SweepInfo
    | SweepList
    | ScenarioList
    | ScenarioInfo
    | AttemptTexts
    | CodeChange
    | OpsReport
)
Message = Request | Reply | Event

R = TypeVar("R", bound=_Msg)


def _same(reply: R) -> R:
    return reply


def answer_to(request: RequestFor[R]) -> Callable[[R], R]:
    """The identity on a reply, typed by the request it answers: `answer_to(request)(reply)` is refused by mypy
    when `reply` is not the type `request` declares (the daemon's dispatch writes each answer through it)."""
    return _same


def is_answer(reply: Reply, request: RequestFor[R]) -> TypeGuard[R]:
    """Whether `reply` is of the type `request` declares (an `ErrorReply` is not): a client's check, typed."""
    return isinstance(reply, _REPLY_TYPES[type(request)])


def encoder() -> msgspec.msgpack.Encoder:
    return msgspec.msgpack.Encoder()


def decoder(kind: Any = Message) -> msgspec.msgpack.Decoder[Any]:
    return msgspec.msgpack.Decoder(kind)


__all__ = [
    "HISTORY_END",
    "PROTOCOL_VERSION",
    "AttemptSummary",
    "AttemptTexts",
    "BoxSample",
    "Cancel",
    "CodeChange",
    "ConfigStatus",
    "DiskUsage",
    "EngineInfo",
    "ErrorReply",
    "Event",
    "FailedTest",
    "FileChange",
    "GetAttempt",
    "GetCodeChange",
    "GetOps",
    "GetScenario",
    "GetSweep",
    "GpuInfo",
    "Hello",
    "HelloReply",
    "ListScenarios",
    "ListSweeps",
    "Message",
    "Ok",
    "OpsEndpoint",
    "OpsPoint",
    "OpsReport",
    "OpsSweep",
    "Pause",
    "Ping",
    "R",
    "Reply",
    "Request",
    "RequestFor",
    "RequestId",
    "Resume",
    "RetryScenario",
    "SandboxInfo",
    "ScenarioInfo",
    "ScenarioList",
    "ScenarioRow",
    "Stop",
    "Submit",
    "Subscribe",
    "SweepInfo",
    "SweepList",
    "TranscriptItem",
    "answer_to",
    "decoder",
    "encoder",
    "is_answer",
    "reply_type",
]
