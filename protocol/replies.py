"""The replies: `Ok`, `ErrorReply` and each typed answer (sweeps, scenarios, attempts, code changes, ops), with
the Structs they carry."""

from __future__ import annotations

import msgspec

from protocol.kinds import AttemptStep, FailureCategory, InfraKind, Outcome, Phase, ScenarioStatus, SweepStatus
from protocol.msgbase import Msg
from protocol.units import dollars


class Ok(Msg, tag="ok", frozen=True):
    detail: str = ""


class ErrorReply(Msg, tag="error", frozen=True):
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
    # Of its model calls: how many, how many estimated (no usage reported, or abandoned) and how many unpriced (a
    # model without a price: cost unknown, not 0). `protocol.units.dollars` shows `cost` with them.
    calls: int = 0
    estimated_calls: int = 0
    unpriced_calls: int = 0

    @property
    def cost_text(self) -> str:
        return dollars(self.cost, self.calls, self.estimated_calls, self.unpriced_calls)


class EngineInfo(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One Docker engine a sweep is spread over: its slots in use (by every sweep) and its health."""

    url: str
    slots: int
    used: int
    healthy: bool
    detail: str = ""  # why it is not healthy (or what it last failed)
    scenarios: int = 0  # this sweep's scenarios on it now
    down_since: float = 0.0  # Unix time an outage its scenarios wait out began; 0 while it answers
    waiting: int = 0  # scenarios paused until it answers again (every sweep's)


class SandboxInfo(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A sandbox's container or volume on an engine, and which state directory owns it (`staminad sandboxes`)."""

    engine: str
    kind: str  # "container" or "volume"
    name: str
    state_dir: str = ""  # the state directory its labels name ("" when they name none)
    sweep: str = ""
    scenario: str = ""
    running: bool = False  # a container that runs (holding memory and pids)
    orphan: str = ""  # why no state directory owns it any more ("" when one does, or it is not ours to judge)
    owner: str = ""  # who keeps it, when it is not an orphan


class ManualWait(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A manual scenario waiting on a person: the prompt to read, where to work and the command that ends the turn."""

    configuration: str
    seed: int
    prompt: str
    workspace: str
    done: str

    @property
    def line(self) -> str:
        """What `status` prints of it, in the words of the engine's `ManualPrompt` line."""
        return (
            f"{self.configuration} seed {self.seed}: your turn. Prompt: {self.prompt}; work in {self.workspace}; "
            + (f"then run: {self.done}")
        )


class SweepInfo(Msg, tag="sweep", frozen=True):
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
    waiting: tuple[ManualWait, ...] = ()  # manual scenarios whose prompt is handed over and not yet answered


class SweepList(Msg, tag="sweeps", frozen=True):
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
    categories: tuple[FailureCategory, ...]
    passed_tests: int | None
    total_tests: int | None
    harness_exit: int | None
    harness_seconds: float | None
    suite_seconds: float | None
    tokens: int = 0  # model tokens (input + output) the attempt's harness used through the gateway
    cost: float = 0.0  # their price in dollars
    calls: int = 0  # model calls, of which estimated and unpriced as in `ConfigStatus`
    estimated_calls: int = 0
    unpriced_calls: int = 0
    compactions: int = 0  # calls the harness made to compact its context (mini-swe-agent's summary)

    @property
    def cost_text(self) -> str:
        return dollars(self.cost, self.calls, self.estimated_calls, self.unpriced_calls)


class TranscriptItem(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One item of an agent's transcript: who (user, assistant, tool, system), what it said, the tools it called."""

    role: str
    text: str
    tools: tuple[str, ...] = ()


class ScenarioInfo(Msg, tag="scenario", frozen=True):
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


class ScenarioList(Msg, tag="scenarios", frozen=True):
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


class AttemptTexts(Msg, tag="attempt", frozen=True):
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


class CodeChange(Msg, tag="code_change", frozen=True):
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
        n = sum(1 for f in self.files if f.status != "seeded")  # the benchmark's README and spec are not the agent's
        files = "no file changed" if n == 0 else f"{n} file{'s' if n != 1 else ''} changed"
        return f"{files}, +{self.added} -{self.removed} lines, against {self.base}"


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


class OpsReport(Msg, tag="ops", frozen=True):
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
    orphans: tuple[SandboxInfo, ...] = ()  # sandboxes whose state directory is gone or no longer knows them
