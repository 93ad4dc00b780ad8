"""The closed sets of words that travel between the store, the daemon and its clients, as `Literal`s.

Each set is one `Literal` and the tuple of its words (`get_args`), so a `match` over it ends in `assert_never` and
a table keyed by it is checked for completeness. A word read back from a place mypy cannot see (a SQLite column,
an older store) goes through its `known_*` function: a word outside the set is an `UnknownWord` naming the set,
never a plain `str` let through. On the wire msgspec checks the `Literal` itself when it decodes a message.
"""

from __future__ import annotations

from typing import Final, Literal, TypeVar, get_args

from protocol.errors import ExpectedError

# How an attempt failed on the infrastructure side (`staminad.engine.outcome` says whose fault each is).
HarnessKind = Literal["harness_crash", "self_kill", "harness_killed", "stuck", "sandbox_exited", "context_exhausted"]
# internal_error: a bug of the benchmark's own code ended the scenario (see `staminad.engine.contain`).
PlatformKind = Literal["sandbox_lost", "engine_error", "port_taken", "llm_unavailable", "internal_error"]
InfraKind = HarnessKind | PlatformKind

# A scenario's status in the store: pending and running, then one of the final four.
FinalStatus = Literal["done", "failed", "infra_failed", "capped"]
ScenarioStatus = Literal["pending", "running"] | FinalStatus

# A sweep's status in the store.
SweepStatus = Literal["running", "paused", "finished", "cancelled", "error"]

# How far an attempt got, as stored (`attempts.phase`): launched -> harness_done -> tested.
AttemptStep = Literal["launched", "harness_done", "tested"]

# How a tested attempt ended (`attempts.outcome`).
Outcome = Literal["pass", "fail", "infra"]

# A test's failure category: the paper's taxonomy (appendix G.2), plus `business_logic` for guards and effects and
# `server_bad_response` for an answer the runner cannot use (`staminad.suite.model` says more); every test has one.
Category = Literal[
    "validation",
    "default_value",
    "enum_handling",
    "cascade_deletion",
    "rename",
    "regression",
    "wrong_endpoint",
    "type_error",
    "missing_feature",
    "server_crash",
    "server_bad_response",
    "wrong_response_format",
    "business_logic",
]
# How the agent's server failed to start or answer, as the probe saw it: an attempt's category when no test ran.
ServerKind = Literal[
    "server_exited",
    "server_not_listening",
    "server_closed_connection",
    "server_too_slow",
    "server_bad_response",
    "server_left_running",
    "server_exhausted",
]
# What a failed attempt failed of (`attempts.categories`): its failed tests' categories, or how its server failed.
FailureCategory = Category | ServerKind

# Where a scenario stands, in words for people (`protocol.events.phase`): its final status once it has one.
Phase = (
    Literal["pending", "agent working", "retrying", "infra retry", "testing", "passed", "feedback", "infra wait"]
    | FinalStatus
)

HARNESS_KINDS: Final[tuple[HarnessKind, ...]] = get_args(HarnessKind)
PLATFORM_KINDS: Final[tuple[PlatformKind, ...]] = get_args(PlatformKind)
INFRA_KINDS: Final[tuple[InfraKind, ...]] = HARNESS_KINDS + PLATFORM_KINDS
FINAL: Final[tuple[FinalStatus, ...]] = get_args(FinalStatus)
SCENARIO_STATUSES: Final[tuple[ScenarioStatus, ...]] = ("pending", "running", *FINAL)
SWEEP_STATUSES: Final[tuple[SweepStatus, ...]] = get_args(SweepStatus)
ATTEMPT_STEPS: Final[tuple[AttemptStep, ...]] = get_args(AttemptStep)
OUTCOMES: Final[tuple[Outcome, ...]] = get_args(Outcome)
CATEGORIES: Final[tuple[Category, ...]] = get_args(Category)
SERVER_KINDS: Final[tuple[ServerKind, ...]] = get_args(ServerKind)
FAILURE_CATEGORIES: Final[tuple[FailureCategory, ...]] = CATEGORIES + tuple(
    k for k in SERVER_KINDS if k not in CATEGORIES
)

W = TypeVar("W", bound=str)


class UnknownWord(ExpectedError, ValueError):
    """A stored or received word outside its closed set: names the set, the word and the words it may be (one
    line; a command that meets one says it and exits 1)."""

    def __init__(self, what: str, word: object, words: tuple[str, ...]) -> None:
        super().__init__(f"unknown {what} {word!r} (known: {', '.join(words)})")
        self.what, self.word = what, word


def _known(what: str, word: object, words: tuple[W, ...]) -> W:
    for known in words:
        if known == word:
            return known
    raise UnknownWord(what, word, words)


def known_infra_kind(word: object) -> InfraKind:
    """`word` as an infra kind, or `UnknownWord`."""
    return _known("infra kind", word, INFRA_KINDS)


def known_scenario_status(word: object) -> ScenarioStatus:
    """`word` as a scenario status, or `UnknownWord`."""
    return _known("scenario status", word, SCENARIO_STATUSES)


def known_sweep_status(word: object) -> SweepStatus:
    """`word` as a sweep status, or `UnknownWord`."""
    return _known("sweep status", word, SWEEP_STATUSES)


def known_step(word: object) -> AttemptStep:
    """`word` as an attempt's stored step, or `UnknownWord`."""
    return _known("attempt step", word, ATTEMPT_STEPS)


def known_outcome(word: object) -> Outcome:
    """`word` as an attempt's outcome, or `UnknownWord`."""
    return _known("outcome", word, OUTCOMES)


def known_categories(text: object) -> tuple[FailureCategory, ...]:
    """A stored comma-joined list of failure categories (NULL or empty: none) as its words, or `UnknownWord`."""
    if text is None or text == "":
        return ()
    if not isinstance(text, str):
        raise UnknownWord("failure categories", text, FAILURE_CATEGORIES)
    return tuple(_known("failure category", word, FAILURE_CATEGORIES) for word in text.split(","))


def known_infra_kind_or_none(word: object) -> InfraKind | None:
    """An optional stored infra kind (NULL until an attempt fails on the infrastructure side)."""
    return None if word is None else known_infra_kind(word)


def known_outcome_or_none(word: object) -> Outcome | None:
    """An optional stored outcome (NULL until an attempt is tested)."""
    return None if word is None else known_outcome(word)


__all__ = [
    "ATTEMPT_STEPS",
    "CATEGORIES",
    "FAILURE_CATEGORIES",
    "FINAL",
    "HARNESS_KINDS",
    "INFRA_KINDS",
    "OUTCOMES",
    "PLATFORM_KINDS",
    "SCENARIO_STATUSES",
    "SERVER_KINDS",
    "SWEEP_STATUSES",
    "AttemptStep",
    "Category",
    "FailureCategory",
    "FinalStatus",
    "HarnessKind",
    "InfraKind",
    "Outcome",
    "Phase",
    "PlatformKind",
    "ScenarioStatus",
    "ServerKind",
    "SweepStatus",
    "UnknownWord",
    "known_categories",
    "known_infra_kind",
    "known_infra_kind_or_none",
    "known_outcome",
    "known_outcome_or_none",
    "known_scenario_status",
    "known_step",
    "known_sweep_status",
]
