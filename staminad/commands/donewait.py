"""`staminad done --wait`: after marking a manual attempt finished, wait for its verdict and the next prompt.

The marker path the engine printed names the attempt: `STATE/sandboxes/SWEEP/c<config id>-s<seed>/control/
markers/t<turn>-a<attempt>-i<infra try>.json`. The state store is polled read-only (a daemon or a `staminad run`
writes it; both work) until the attempt is tested, bounded by a timeout; then the sandbox's control directory
says whether another prompt was handed over, and the store whether the scenario ended.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol.events import FINAL
from protocol.usage import hint
from staminad.commands.args import CommandError
from state.queries import connect_readonly

_SANDBOX = re.compile(r"c([0-9]+)-s([0-9]+)")
_JOB = re.compile(r"t([0-9]+)-a([0-9]+)-i([0-9]+)")
POLL = 0.25  # seconds between looks at the store: a verdict takes tens of seconds, the look a millisecond
NEXT_PROMPT_WAIT = 30.0  # after the verdict, how long the next prompt may take to be handed over


@dataclass(frozen=True)
class Attempt:
    """The attempt a marker path belongs to."""

    state_dir: Path
    control: Path
    config_id: int
    seed: int
    turn: int
    attempt: int
    infra_try: int
    job: str


def locate(marker: Path) -> Attempt:
    """The attempt of a marker path the engine printed; CommandError when the path says too little."""
    path = marker.absolute()
    parents = path.parents
    sandbox, job = (
        (_SANDBOX.fullmatch(parents[2].name), _JOB.fullmatch(path.stem)) if len(parents) > 5 else (None, None)
    )
    if sandbox is None or job is None or parents[4].name != "sandboxes":
        raise CommandError(
            f"--wait cannot tell the attempt from {marker} (expected STATE/sandboxes/SWEEP/c<N>-s<SEED>/control/"
            "markers/t<TURN>-a<ATTEMPT>-i<TRY>.json, the path the engine printed)"
        )
    return Attempt(
        state_dir=parents[5],
        control=parents[1],
        config_id=int(sandbox[1]),
        seed=int(sandbox[2]),
        turn=int(job[1]),
        attempt=int(job[2]),
        infra_try=int(job[3]),
        job=path.stem,
    )


def _look(db: Path, at: Attempt) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the attempt's row, its scenario's row) as the store has them now; (None, None) if not written yet."""
    try:
        conn = connect_readonly(db)
    except FileNotFoundError:
        return None, None
    try:
        found = conn.execute(
            "SELECT * FROM scenarios WHERE config_id = ? AND seed = ?", (at.config_id, at.seed)
        ).fetchone()
        if found is None:
            return None, None
        scenario = dict(found)
        row = conn.execute(
            "SELECT phase, outcome, infra_kind, categories, passed_tests, total_tests FROM attempts "
            "WHERE scenario_id = ? AND turn = ? AND attempt = ? AND infra_try = ?",
            (scenario["id"], at.turn, at.attempt, at.infra_try),
        ).fetchone()
        return (None if row is None else dict(row)), scenario
    except sqlite3.OperationalError:  # busy or mid-migration: look again
        return None, None
    finally:
        conn.close()


def verdict_line(row: dict[str, Any]) -> str:
    """The attempt's outcome in one line: pass, or fail with the failing test count and categories."""
    total, passed = row.get("total_tests") or 0, row.get("passed_tests") or 0
    if row["outcome"] == "pass":
        return f"passed: {passed}/{total} tests"
    if row["outcome"] == "fail":
        return f"failed: {total - passed}/{total} tests failed ({row.get('categories') or 'no category'})"
    return f"not scored: an infrastructure failure ({row.get('infra_kind') or 'unknown'}); the engine tries again"


def _next_prompt(at: Attempt) -> str | None:
    """The job handed over after this one and not yet marked done, if any."""
    jobs = at.control / "jobs"
    try:
        later = sorted(p.name for p in jobs.iterdir() if p.name > at.job and _JOB.fullmatch(p.name))
    except OSError:
        return None
    pending = [j for j in later if not (at.control / "markers" / f"{j}.json").exists()]
    return pending[-1] if pending else None


def wait(
    marker: Path,
    timeout: float,
    out: Callable[[str], None],
    now: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Wait (up to `timeout` seconds) for the attempt of `marker` to be tested; print its outcome, then the
    next prompt's path or the scenario's end. 0 once a verdict is printed; CommandError (1) on a timeout."""
    at = locate(marker)
    db = at.state_dir / "staminad.db"
    deadline = now() + timeout
    out(f"waiting for the verdict of {at.job} (the server starts, then the suite runs; up to {timeout:g}s)")
    phase: str | None = None
    while True:
        row, scenario = _look(db, at)
        if row is not None and row["outcome"] is not None:
            break
        if row is not None and row["phase"] != phase:
            phase = row["phase"]
            if phase == "harness_done":
                out("testing...")
        if now() >= deadline:
            raise CommandError(
                f"no verdict for {at.job} within {timeout:g}s (is the daemon or `{hint('run')}` running? "
                f"`{hint('status')}` shows the sweep)"
            )
        sleep(POLL)
    out(f"{at.job}: {verdict_line(row)}")
    until = min(deadline, now() + NEXT_PROMPT_WAIT)
    while True:
        job = _next_prompt(at)
        if job is not None:
            out(f"next prompt: {at.control / 'prompts' / f'{job}.md'}")
            out(f"then run: {hint('done')} --marker {at.control / 'markers' / f'{job}.json'}")
            return 0
        _, scenario = _look(db, at)
        if scenario is not None and scenario.get("status") in FINAL:
            out(f"the scenario ended {scenario['status']}: {scenario.get('turns_passed')} turns passed")
            return 0
        if now() >= until:
            out("no next prompt yet: the engine hands it over when it resumes")
            return 0
        sleep(POLL)


__all__ = ["Attempt", "locate", "verdict_line", "wait"]
