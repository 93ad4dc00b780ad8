"""Where a scenario stands in Algorithm 1, replayed from its attempt rows (never kept only in memory).

A daemon killed at any point resumes by replaying the rows: the next step, or the final verdict.
"""

from __future__ import annotations

import msgspec

from protocol.kinds import FinalStatus
from protocol.usage import hint
from staminad.engine.blame import infra_tries
from staminad.engine.outcome import FINAL_KINDS, is_platform
from state.store import AttemptRow


class Position(msgspec.Struct, frozen=True, kw_only=True):
    """Where a scenario stands, derived from its attempt rows."""

    turns_passed: int
    final: FinalStatus | None = None
    reason: str = ""
    turn: int = 0
    attempt: int = 1
    infra_try: int = 0
    prompt_kind: str = "turn"
    prompt: str | None = None  # None: the turn's own prompt
    resume: AttemptRow | None = None


def position(
    rows: list[AttemptRow], n_turns: int, retries: int, infra_retries: int, turns_passed: int | None = None
) -> Position:
    """Replay attempt rows into the next step (or the final verdict) of Algorithm 1.

    Given `turns_passed`, `rows` need only be the latest turn's attempts (the engine's narrow read).

    Infra failures are retried up to `infra_retries` times per agent call and per side (harness,
    platform; see `blame`); agent failures, server failures included, consume R.
    """
    passed = len({r.turn for r in rows if r.outcome == "pass"}) if turns_passed is None else turns_passed
    if not rows:
        return Position(turns_passed=0)
    last = rows[-1]
    if last.phase != "tested":
        return Position(
            turns_passed=passed,
            turn=last.turn,
            attempt=last.attempt,
            infra_try=last.infra_try,
            prompt_kind=last.prompt_kind,
            prompt=last.prompt,
            resume=last,
        )
    if last.outcome == "pass":
        if last.turn >= n_turns:
            return Position(turns_passed=passed, final="done", reason="passed every turn")
        return Position(turns_passed=passed, turn=last.turn + 1)
    if last.outcome == "infra":
        platform = is_platform(last.infra_kind)
        if last.infra_kind in FINAL_KINDS:
            return Position(
                turns_passed=passed,
                final="infra_failed",
                reason=f"{last.infra_kind} on turn {last.turn}: the model's context window ran out (scored with "
                "the turns passed; a retry would send the same context)",
            )
        if infra_tries(rows, last.turn, last.attempt, platform) > infra_retries:
            why = (
                f"a platform fault, not scored; `{hint('retry')}` runs it again"
                if platform
                else "the harness failed: scored with the turns passed"
            )
            return Position(
                turns_passed=passed,
                final="infra_failed",
                reason=f"{last.infra_kind} on turn {last.turn}, {infra_retries} infra retries used ({why})",
            )
        return Position(
            turns_passed=passed,
            turn=last.turn,
            attempt=last.attempt,
            infra_try=last.infra_try + 1,
            prompt_kind=last.prompt_kind,
            prompt=last.prompt,
        )
    if last.attempt > retries:
        return Position(
            turns_passed=passed,
            final="failed",
            reason=f"turn {last.turn} failed after {last.attempt} attempts: {','.join(last.categories)}",
        )
    return Position(
        turns_passed=passed, turn=last.turn, attempt=last.attempt + 1, prompt_kind="feedback", prompt=last.feedback
    )


__all__ = ["Position", "position"]
