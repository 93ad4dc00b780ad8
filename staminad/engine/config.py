"""Sweep files: TOML decoded into msgspec Structs, with one-line errors for anything malformed.

A sweep names its scenarios (a pack, or seeds and generation parameters), a matrix of
configurations (agents x models x retry budgets R x feedback levels, all on the same scenarios so every
comparison is paired) and how to run them (runtime, parallelism, bounds). Models are listed in `[llm]`
(`staminad.engine.models`).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

import msgspec

from protocol.errors import UsageError
from protocol.usage import did_you_mean
from staminad.agents.base import UnknownAgent, adapter_for
from staminad.bench.readme import LANGUAGE_NAMES
from staminad.bench.seeds import SeedError, seed_list
from staminad.engine.models import ModelSpec, check_models, protocol_refusal, sweep_models
from staminad.gateway.pricing import Price, price_for
from staminad.sandbox.bounded import NotSmallFileError, read_small_file
from staminad.sandbox.docker.enginespec import EngineSpec, check_spec

# A sweep's name is a directory under sandboxes/ and a row key: one path component, never `.` or `..`.
MAX_SWEEP_BYTES = 1024 * 1024  # a sweep file is a few hundred bytes of TOML
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
MAX_SECONDS = 7 * 86400  # the longest timeout taken, from a sweep file or a flag: more is a typo


def positive_seconds(value: float) -> bool:
    """Whether a timeout is a positive number of seconds up to MAX_SECONDS (so never NaN or infinite)."""
    return 0 < value <= MAX_SECONDS


class SweepError(UsageError, ValueError):
    """A sweep file that cannot be run, with the reason in one line."""


class ScenarioSource(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pack: str | None = None
    seeds: str = "0-1"
    turns: int = 5
    sampler: Literal["uniform", "weighted"] = "uniform"
    naming: Literal["programmatic", "themed"] = "themed"
    changes_per_turn: int = 5
    language: str = "python"


class Matrix(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    agents: list[str]
    retries: list[int] = msgspec.field(default_factory=lambda: [2])
    feedback: list[Literal["detailed", "medium", "minimal"]] = msgspec.field(default_factory=lambda: ["detailed"])


class RunSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    runtime: str = "auto"  # "auto" or a name of `engine.runtime.RUNTIMES`, checked by `_check`
    # Where a Docker sandbox's files live: bind-mounted from the daemon's disk, or in the engine's volumes
    # (nothing shared with the daemon; see staminad/sandbox/docker/volumesandbox.py).
    workspace: Literal["mount", "volume"] = "mount"
    parallel: int = 2
    turn_timeout: float = 600.0
    server_start_timeout: float = 60.0
    request_timeout: float = 5.0
    infra_retries: int = 10
    image: str = "staminabench/sandbox:latest"  # for agents naming no layer (built-ins); a harness runs its own
    cpus: float = 1.0
    memory_mb: int = 2048
    pids: int = 512
    # Docker engines to spread the sweep's sandboxes over (each in volume mode); none: the local engine as above.
    engines: list[EngineSpec] = []
    # Seconds a scenario waits out engine outages in total (paused, no infra retry spent) before the attempt
    # is recorded as the platform's and the scenario ends `infra_failed` (see staminad/sandbox/outage.py).
    outage_budget: float = 1800.0


class LLMSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The models real harnesses use, reached only through the daemon's gateway: one `endpoint` and `model`,
    or a list of `models`, each a column of the grid."""

    endpoint: str = ""  # an OpenAI-compatible base URL such as http://127.0.0.1:8000/v1
    model: str = ""
    models: list[ModelSpec] = []
    api_key_env: str = "OPENAI_API_KEY"  # read from the daemon's environment, never written anywhere
    context_window: int | None = None  # the one model's (`[[llm.models]]` give each model its own)
    compact_at: float | None = None
    scenario_cost_cap: float | None = None  # US dollars; the scenario stops as `capped` once reached
    sweep_cost_cap: float | None = None
    outage_timeout: float = 600.0  # seconds of upstream trouble waited out before an infra retry
    stream_idle_timeout: float = 120.0
    first_byte_timeout: float = 300.0  # seconds to a reply's head; a request past it is never sent again
    concurrency: int = 8  # calls in flight at once at the endpoint (adapted down on 429s and latency)
    pricing: dict[str, Price] = {}


class SweepFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    scenarios: ScenarioSource = ScenarioSource()
    matrix: Matrix
    run: RunSettings = RunSettings()
    llm: LLMSettings | None = None


class Configuration(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    agent: str
    retries: int
    feedback: Literal["detailed", "medium", "minimal"]
    model: str = ""  # the model it runs on ("" for a sweep without [llm])


def load_sweep(path: Path) -> tuple[SweepFile, str]:
    """Parse and check a sweep file; returns it and its fingerprint (sha256 of the canonical config)."""
    return parse_sweep(read_sweep(path), path)


def read_sweep(path: Path) -> bytes:
    """A sweep file's bytes: a regular file of at most MAX_SWEEP_BYTES (not `/dev/zero`, not a FIFO)."""
    try:
        return read_small_file(path, MAX_SWEEP_BYTES)
    except OSError as exc:
        raise SweepError(f"cannot read {path}: {exc.strerror}") from None
    except NotSmallFileError as exc:
        raise SweepError(f"{exc}; a sweep file is a small TOML file") from None


def parse_sweep(data: bytes, path: Path) -> tuple[SweepFile, str]:
    """Like `load_sweep` for TOML already read (`path` names it in errors and anchors a relative pack)."""
    if len(data) > MAX_SWEEP_BYTES:  # the daemon parses what a client sends, however it was read
        raise SweepError(f"{path} is larger than {MAX_SWEEP_BYTES} bytes; a sweep file is a small TOML file")
    try:
        sweep = msgspec.toml.decode(data, type=SweepFile)
    except msgspec.ValidationError as exc:
        raise SweepError(f"{path}: {exc}{_near_miss(str(exc))}") from None
    except msgspec.DecodeError as exc:
        raise SweepError(f"{path} is not valid TOML: {exc}") from None
    _check(sweep, path)
    if sweep.scenarios.pack and not Path(sweep.scenarios.pack).is_absolute():
        pack = str((path.parent / sweep.scenarios.pack).resolve())
        sweep = msgspec.structs.replace(sweep, scenarios=msgspec.structs.replace(sweep.scenarios, pack=pack))
    return sweep, fingerprint(sweep)


_ENUM = re.compile(r"Invalid enum value '(.*)' - at `\$(?:\.\w+)*\.(\w+)(?:\[\d+\])?\.(\w+)(?:\[\d+\])?`")
_FIELD = re.compile(r"Object contains unknown field `([^`]*)`(?: - at `\$(?:\.\w+)*?(?:\.(\w+))?(?:\[\d+\])?`)?$")


def _near_miss(message: str) -> str:
    """`; did you mean 'docker'?` for msgspec's error on a misspelt choice (`run.runtime = "dokcer"`) or key."""
    sections: dict[str, Any] = {
        "scenarios": ScenarioSource,
        "matrix": Matrix,
        "run": RunSettings,
        "llm": LLMSettings,
        "models": ModelSpec,
    }
    if (enum := _ENUM.match(message)) is not None:
        value, section, field = enum.groups()
        struct = sections.get(section)
        if struct is None or field not in struct.__struct_fields__:
            return ""
        return did_you_mean(value, _literals(get_type_hints(struct)[field]))
    if (key := _FIELD.match(message)) is not None:
        struct = SweepFile if key.group(2) is None else sections.get(key.group(2))
        return "" if struct is None else did_you_mean(key.group(1), struct.__struct_fields__)
    return ""


def _literals(annotation: Any) -> list[str]:
    """The strings of the `Literal`s in an annotation, through `list[...]` and unions."""
    if get_origin(annotation) is Literal:
        return [str(a) for a in get_args(annotation)]
    return [v for arg in get_args(annotation) for v in _literals(arg)]


# Fields added to `[run]` after sweeps were stored, with the default that means what those sweeps did: left at
# it, a field is not in the fingerprint, so a sweep stored before the field existed still resumes.
LATER_RUN_FIELDS = {"workspace": "mount"}
LLM_OPERATIONAL = ("first_byte_timeout", "concurrency")
# Fields added to `[llm]` and its models after sweeps were stored: left unset, they are not in the fingerprint.
LATER_LLM_FIELDS = ("context_window", "compact_at")
LATER_MODEL_FIELDS = ("compact_at",)


def fingerprint(sweep: SweepFile) -> str:
    """sha256 of the canonical configuration: a resubmitted sweep must match what its rows were made with.

    `run.engines` and `run.outage_budget` are left out: where the sandboxes run, and how long an engine outage is
    waited out, change no row, so a sweep may resume on other engines (and a sweep stored before engines existed
    keeps its fingerprint); so are `LLM_OPERATIONAL`.
    """
    data = msgspec.to_builtins(sweep, order="sorted")
    data["run"].pop("engines", None)
    data["run"].pop("outage_budget", None)  # how long an engine outage is waited out changes no row
    for key in LLM_OPERATIONAL:  # how patiently and how many at once the model is called changes no row
        (data.get("llm") or {}).pop(key, None)
    for key, default in LATER_RUN_FIELDS.items():
        if data["run"].get(key) == default:
            del data["run"][key]
    if data.get("llm") is not None and not data["llm"]["models"]:  # a single-model sweep stored before models
        del data["llm"]["models"]
    llm = data.get("llm") or {}
    for key in LATER_LLM_FIELDS:
        if key in llm and llm[key] is None:
            del llm[key]
    for model in llm.get("models") or ():
        for key in LATER_MODEL_FIELDS:
            if model.get(key) is None:
                model.pop(key, None)
    return hashlib.sha256(msgspec.json.encode(data)).hexdigest()[:16]


def _check(sweep: SweepFile, path: Path) -> None:  # noqa: C901 - one branch per rule, each with its own one-line message
    def bad(msg: str) -> SweepError:
        return SweepError(f"{path}: {msg}")

    if not SAFE_NAME.fullmatch(sweep.name):
        raise bad(
            f"name {sweep.name!r} must be one path component: a letter or digit, then up to 99 letters, "
            "digits, '-', '_' or '.'"
        )
    s, r, m = sweep.scenarios, sweep.run, sweep.matrix
    if s.language not in LANGUAGE_NAMES:
        raise bad(
            f"scenarios.language {s.language!r} is not one of {', '.join(sorted(LANGUAGE_NAMES))}"
            f"{did_you_mean(s.language, LANGUAGE_NAMES)}"
        )
    try:
        seed_list(s.seeds)
    except SeedError as exc:
        raise bad(f"scenarios.seeds: {exc}") from None
    if not 0 <= s.turns <= 100_000 or not 1 <= s.changes_per_turn <= 50:
        raise bad("scenarios.turns must be 0..100000 and changes_per_turn 1..50")
    if not m.agents or not m.retries or not m.feedback:
        raise bad("matrix.agents, matrix.retries and matrix.feedback must not be empty")
    for agent in m.agents:
        try:
            adapter = adapter_for(agent)
        except UnknownAgent as exc:
            raise bad(f"matrix.agents: {exc}") from None
        if adapter.manual and sweep.run.workspace == "volume":
            raise bad(f'matrix.agents: {agent} hands its files to a person on this disk: use run.workspace = "mount"')
        if adapter.harness is not None and sweep.llm is None:
            raise bad(f"matrix.agents: {agent} needs a model: add an [llm] table with endpoint and model")
    if sweep.llm is not None:
        llm = sweep.llm
        if lines := check_models(llm):
            raise SweepError("\n".join(f"{path}: {line}" for line in lines))
        _check_protocols(m.agents, sweep_models(llm), path)
        if any(c is not None and c <= 0 for c in (llm.scenario_cost_cap, llm.sweep_cost_cap)):
            raise bad("llm cost caps must be positive numbers of dollars")
        timeouts = (llm.stream_idle_timeout, llm.first_byte_timeout)
        if not 0 < llm.outage_timeout <= 7 * 86400 or not all(0 < t <= 86400 for t in timeouts):
            raise bad("llm.outage_timeout, llm.stream_idle_timeout and llm.first_byte_timeout must be positive seconds")
        if not 1 <= llm.concurrency <= 1024:
            raise bad("llm.concurrency must be 1..1024 calls in flight at once")
        capped = llm.scenario_cost_cap is not None or llm.sweep_cost_cap is not None
        for model in sweep_models(llm) if capped else ():  # every model: a cap blind to one model caps nothing
            if model.price is None and price_for(llm.pricing, model.name) is None:
                where = "its [[llm.models]] entry (price = { input = ..., output = ... })" if llm.models else ""
                raise bad(
                    f"llm: a cost cap is set but {model.name!r} has no price: add it to "
                    f"{where or '[llm.pricing]'}{' or [llm.pricing]' if where else ''} or drop the cap"
                )
    if any(not 0 <= x <= 100 for x in m.retries):
        raise bad("matrix.retries must be between 0 and 100")
    from staminad.sandbox.runtimes import runtime_problem

    if (problem := runtime_problem(r.runtime, r.workspace, bool(r.engines))) is not None:
        raise bad(problem)
    if not 1 <= r.parallel <= 1024:
        raise bad("run.parallel must be 1..1024")
    _check_engines(r, path)
    for key in ("turn_timeout", "server_start_timeout", "request_timeout", "outage_budget"):
        if not positive_seconds(getattr(r, key)):
            raise bad(f"run.{key} must be a positive number of seconds")
    if not 0 <= r.infra_retries <= 100:
        raise bad("run.infra_retries must be 0..100")
    # Docker limits: 0 would mean "unlimited" to Docker, so it is refused like a negative one.
    if not 0 < r.cpus <= 1024:
        raise bad(f"run.cpus must be a positive number of CPUs up to 1024 (got {r.cpus})")
    if not 6 <= r.memory_mb <= 1024 * 1024:  # Docker's own minimum is 6 MB
        raise bad(f"run.memory_mb must be 6..1048576 MB (got {r.memory_mb})")
    if not 1 <= r.pids <= 1_000_000:
        raise bad(f"run.pids must be 1..1000000 (got {r.pids})")


def _check_protocols(agents: list[str], models: list[ModelSpec], path: Path) -> None:
    """Each harness against each model: the first pair that cannot talk refuses the sweep, in one line."""
    from staminad.agents.harnesses import HARNESSES

    for agent in agents:
        harness = adapter_for(agent).harness
        if harness is None:
            continue
        for model in models:
            if refusal := protocol_refusal(agent, HARNESSES[harness].protocol, model):
                raise SweepError(f"{path}: {refusal}")


def _check_engines(r: RunSettings, path: Path) -> None:
    """`run.engines`: one line per bad entry, all of them at once."""
    if not r.engines:
        return
    lines = []
    seen: set[str] = set()
    for i, spec in enumerate(r.engines):
        lines += [f"{path}: run.engines[{i}]: {e}" for e in check_spec(spec)]
        if spec.url in seen:
            lines.append(f"{path}: run.engines[{i}]: {spec.url} is listed twice")
        seen.add(spec.url)
    if lines:
        raise SweepError("\n".join(lines))


def configurations(sweep: SweepFile) -> list[Configuration]:
    """The matrix, expanded: every agent on every model, with every R and feedback level; names are stable so
    a resumed sweep finds its rows again (a single-model `[llm]` keeps the names it had before models)."""
    listed = sweep.llm is not None and bool(sweep.llm.models)
    models = [m.name for m in sweep_models(sweep.llm)] or [""]
    m = sweep.matrix
    out = []
    for agent, model, retries, feedback in itertools.product(m.agents, models, m.retries, m.feedback):
        name = f"{agent} {model} R={retries} {feedback}" if listed else f"{agent} R={retries} {feedback}"
        out.append(Configuration(name=name, agent=agent, retries=retries, feedback=feedback, model=model))
    return out


def sweep_images(sweep: SweepFile) -> list[str]:
    """The images a sweep's configurations run, in order, once each: a harness's layer, else `[run] image`."""
    from staminad.agents.base import adapter_for

    images = [adapter_for(c.agent).image or sweep.run.image for c in configurations(sweep)]
    return list(dict.fromkeys(images))
