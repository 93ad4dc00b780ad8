"""The messages: frozen msgspec Structs in one tagged union, unknown fields refused.

A connection opens with `Hello` (the client's protocol version) answered by `HelloReply`; then each
request gets exactly one reply (`Ok`, `ErrorReply` or a typed answer), and a `Subscribe` turns the
connection into a stream of `Event`s. Every message carries `rid`: a client numbers its requests and
the reply repeats the number, so a reply left over from a request the client gave up on (cancelled,
timed out) is recognised and skipped, never taken as the answer to a later one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeGuard, TypeVar, get_args

import msgspec

from protocol.events import EventData, kind_of
from protocol.kinds import AttemptStep, InfraKind, Outcome, Phase, ScenarioStatus, SweepStatus

PROTOCOL_VERSION = 8  # 4: typed events; 5: SweepInfo.reason, ErrorReply.usage; 6: GetOps; 7: ConfigStatus counts;
# 8: GetCodeChange


class _Msg(msgspec.Struct, frozen=True, tag_field="type", forbid_unknown_fields=True, kw_only=True):
    rid: int = 0  # the request's number, repeated by its reply; 0 on events and unnumbered requests


R_co = TypeVar("R_co", bound=_Msg, covariant=True)  # a request for an Ok is a request for an Ok or a SweepInfo


class RequestFor(_Msg, Generic[R_co], frozen=True):
    """A request whose answer is an `R_co` (or an `ErrorReply`): `Client.request` returns that type, checked."""


class RequestId(msgspec.Struct):
    """Only a message's `rid`, read leniently, so a request that fails to decode still gets its reply matched."""

    rid: int = 0


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


class Ok(_Msg, tag="ok", frozen=True):
    detail: str = ""


class ErrorReply(_Msg, tag="error", frozen=True):
    """A request refused or failed, in one line. `usage`: the request itself was wrong (an unknown sweep, a bad
    sweep file), a client's exit status 2; otherwise the daemon could not do it (a store it cannot read), 1."""

    message: str
    usage: bool = False


class ConfigStatus(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One configuration's figures over a sweep (the engine's summary, sent as is)."""

    name: str
    scenarios: int
    finished: int
    mean_turns: float
    se_turns: float
    pass_rate: float
    statuses: dict[str, int]
    infra: dict[str, int]
    cost: float = 0.0  # US dollars through the gateway (0 without an [llm] table or a price)
    tokens: int = 0  # input + output tokens through the gateway
    # Where the scenarios stand for scoring (`staminad.engine.score.standing`): the figures are over `scored`
    # only; `unscored` ended saying nothing of the agent (a platform fault, nothing tested); `unfinished`
    # started and has not ended; `never_run` never started. With `scored == 0` the figures are no score: `-`.
    unscored: int = 0
    scored: int = 0
    unfinished: int = 0
    never_run: int = 0
    model: str = ""  # the model it runs on ("" for built-in agents in a sweep without [llm])


class EngineInfo(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One Docker engine a sweep is spread over: its slots in use (by every sweep) and its health."""

    url: str
    slots: int
    used: int
    healthy: bool
    detail: str = ""  # why it is not healthy (or what it last failed)
    scenarios: int = 0  # this sweep's scenarios on it now


class SweepInfo(_Msg, tag="sweep", frozen=True):
    """A sweep's figures; `parallel` is its own limit, `active` its scenarios running now (not those held at a
    pause), `queued` those awaiting a slot."""

    sweep: str
    status: SweepStatus
    fingerprint: str
    configurations: tuple[ConfigStatus, ...] = ()
    parallel: int = 0
    active: int = 0
    queued: int = 0
    created_at: float = 0.0  # when the sweep was first submitted (the daemon's clock): a client's ETA base
    paused_seconds: float = 0.0  # of the time since then, how long it was paused (the pause under way included)
    engines: tuple[EngineInfo, ...] = ()  # the engines a running sweep is spread over (none: one engine)
    reason: str = ""  # why the sweep ended in `error`, in one line ("" otherwise)
    # While a large sweep is still laid out lazily: scenarios recorded so far of its total (0, 0 otherwise).
    expanding: int = 0
    expand_total: int = 0


class SweepList(_Msg, tag="sweeps", frozen=True):
    """Every sweep, and the daemon-wide limit on concurrent scenarios with how many slots are in use."""

    sweeps: tuple[SweepInfo, ...]
    limit: int = 0
    active: int = 0


class AttemptSummary(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: int
    turn: int
    attempt: int
    infra_try: int
    phase: AttemptStep
    outcome: Outcome | None
    infra_kind: InfraKind | None
    categories: str | None
    passed_tests: int | None
    total_tests: int | None
    harness_exit: int | None
    harness_seconds: float | None
    suite_seconds: float | None
    tokens: int = 0  # model tokens (input + output) the attempt's harness used through the gateway
    cost: float = 0.0  # their price in dollars


class TranscriptItem(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One item of an agent's transcript: who (user, assistant, tool, system), what it said, the tools it called."""

    role: str
    text: str
    tools: tuple[str, ...] = ()


class ScenarioInfo(_Msg, tag="scenario", frozen=True):
    sweep: str
    configuration: str
    seed: int
    status: ScenarioStatus
    turns_passed: int
    reason: str
    attempts: tuple[AttemptSummary, ...]
    workspace: str = ""  # the sandbox's workspace directory on the daemon's host ("" before it exists)
    # The latest items of the agent's transcript, where its harness leaves one (bounded by the daemon), and
    # the session file they were read from ("" when there is none).
    transcript: tuple[TranscriptItem, ...] = ()
    transcript_path: str = ""


# The history letter a scenario's final status adds after its passed turns (see `ScenarioRow`).
HISTORY_END: dict[ScenarioStatus, str] = {"failed": "F", "infra_failed": "I", "capped": "C"}


class ScenarioRow(msgspec.Struct, forbid_unknown_fields=True):
    """Where one scenario stands: its current turn and attempt, and a compact history of its turns.

    Mutable, so a client can keep its copy current from events.

    `history` has one character per finished turn: `P` passed at the first attempt, `R` passed after
    feedback retries, `F` failed (the scenario ends there), `I` gave up on infrastructure, `C` stopped by a
    cost cap.
    """

    id: int
    configuration: str
    seed: int
    status: ScenarioStatus
    turns_passed: int
    turn: int
    attempt: int
    infra_try: int
    phase: Phase
    last_failure: str
    history: str
    reason: str
    since: float = 0.0  # when the current phase began (the daemon's clock; 0 when unknown)
    deadline: float = 0.0  # when the turn watchdog fires for the attempt the agent works on (0: none running)
    engine: str = ""  # the Docker engine its sandbox was last placed on, in a sweep over several ("" otherwise)


class ScenarioList(_Msg, tag="scenarios", frozen=True):
    sweep: str
    retries: dict[str, int]  # each configuration's R, so a client can show "attempt i of R+1"
    scenarios: tuple[ScenarioRow, ...]
    # The daemon's last event sequence number before the rows were read: every event up to it is
    # already in the rows, so a client folding events onto them skips those.
    seq: int = 0
    turn_timeout: float = 0.0  # the sweep's turn watchdog in seconds, so a client can count down from a launch


class FailedTest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    category: str
    rule: str
    message: str
    request: str
    status: int | None
    response: str


class AttemptTexts(_Msg, tag="attempt", frozen=True):
    id: int
    prompt_kind: str
    prompt: str
    feedback: str | None
    failures: tuple[FailedTest, ...]
    harness_log: str = ""  # the tail of the attempt's harness log
    server_log: str | None = None  # the tail of the log of the server start that tested it (None: no start yet)


class FileChange(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One file that differs between two kept workspaces: `status` added, removed or changed; lines +/-."""

    path: str
    status: str
    added: int = 0
    removed: int = 0
    note: str = ""  # why its lines are not compared (binary, too large, not kept), "" when they are


class CodeChange(_Msg, tag="code_change", frozen=True):
    """An attempt's workspace against the one kept before it (`base`, in words): the files that differ, their
    lines added and removed, a unified diff (bounded: `cut` says what was left out), or why none can be shown."""

    id: int  # the attempt
    base: str = ""  # what it is compared with: "turn 2, attempt 1" or "an empty workspace"
    base_id: int = 0  # that attempt's id (0: an empty workspace, or nothing to compare)
    files: tuple[FileChange, ...] = ()
    added: int = 0
    removed: int = 0
    diff: str = ""
    cut: tuple[str, ...] = ()
    missing: str = ""  # why there is no comparison ("" when there is one)

    @property
    def summary(self) -> str:
        """One line: how many files changed and the lines added and removed."""
        if self.missing:
            return self.missing
        n = len(self.files)
        files = "no file changed" if n == 0 else f"{n} file{'s' if n != 1 else ''} changed"
        return f"{files}, +{self.added} -{self.removed} lines, against {self.base}"


class Event(_Msg, tag="event", frozen=True):
    """One thing that happened in a sweep: `data` is one of the typed kinds in `protocol.events`."""

    sweep: str
    data: EventData
    at: float
    seq: int

    @property
    def kind(self) -> str:
        return kind_of(self.data)


class DiskUsage(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One file system the daemon writes to: what it is for (`role`), its path, its size and free bytes."""

    role: str
    path: str
    total: int
    free: int
    readonly: bool = False


class GpuInfo(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One GPU as NVML reports it: utilisation (percent), memory, and the processes holding it."""

    index: int
    name: str
    util: float
    memory_used: int
    memory_total: int
    processes: tuple[str, ...] = ()  # "pid name (MiB)" of each process on it


class BoxSample(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The machine at one moment: load averages, memory, the disks, and the GPUs (or why none are shown)."""

    at: float
    load: tuple[float, float, float]
    cpus: int
    memory_total: int
    memory_available: int
    disks: tuple[DiskUsage, ...] = ()
    gpus: tuple[GpuInfo, ...] = ()
    gpu_note: str = ""  # why no GPU is listed ("no NVML", "NVML: no driver"), "" when NVML answered


class OpsSweep(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A sweep on the ops view: progress, slots, time left (-1: unknowable), and why it is paused or failed.
    `expanding` counts scenarios recorded of `expand_total` while a large sweep is still being laid out."""

    sweep: str
    status: SweepStatus
    finished: int
    scenarios: int
    active: int
    queued: int
    parallel: int
    eta: float = -1.0
    reason: str = ""
    expanding: int = 0
    expand_total: int = 0


class OpsEndpoint(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A model endpoint as a sweep used it (recorded gateway calls): calls, errors, latency, dollars, cap."""

    sweep: str
    model: str
    calls: int
    errors: int  # answered 429, 5xx or not at all
    latency: float  # mean seconds per call
    spend: float
    cap: float = 0.0  # the sweep's dollar cap (0: none)


class OpsPoint(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One sample of the daemon's history ring: what the sparklines draw."""

    at: float
    load: float  # 1-minute load average
    memory_used: float  # fraction of memory in use
    state_free: int  # bytes free on the state disk
    active: int  # scenarios holding a slot
    gpu_util: float = -1.0  # mean GPU utilisation in percent (-1: no GPU seen)


class OpsReport(_Msg, tag="ops", frozen=True):
    """The box at a glance: what `staminad view`'s /ops page and the TUI's box screen show."""

    at: float
    sweeps: tuple[OpsSweep, ...]
    engines: tuple[EngineInfo, ...]
    limit: int
    in_use: int
    endpoints: tuple[OpsEndpoint, ...]
    box: BoxSample
    history: tuple[OpsPoint, ...] = ()
    sample_every: float = 0.0  # seconds between history points
    stall: str = ""  # why the store's writes wait (a full or read-only state disk), "" when they do not


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
