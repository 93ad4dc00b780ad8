"""What the harness tests share: captured harness outputs, and for the end-to-end ones a one-seed Docker sweep
through the stand-in, `staminad run` on it, and what it stored."""

from __future__ import annotations

import base64
import contextlib
import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from staminad.bench.scenario import ScenarioParams
from staminad.reference import agent as reference_agent
from staminad.reference.agent import SERVER_PACKAGE
from tests.helpers.standin import StandIn
from tests.helpers.tiers import needs

PARAMS = ScenarioParams(turns=1, changes_per_turn=2)
CODEX_MODEL = "gpt-5.5"  # a model codex knows, so it declares its real tools (apply_patch among them)
# What the reference agent writes: its server package's modules, the config and the start script.
SERVER_MODULES = tuple(
    sorted(f"{SERVER_PACKAGE}/{p.name}" for p in Path(reference_agent.__file__).with_name("server").glob("*.py"))
)
FILES = (*SERVER_MODULES, "config.json", "run_server.sh")
# A shell command that checks the server package compiles (as an agent would check its code).
COMPILE = f"python3 -m py_compile {' '.join(SERVER_MODULES)}"
RECORDINGS = Path(__file__).parents[1] / "agents" / "recordings"  # real harness outputs, captured


def write_sweep(
    tmp: Path,
    name: str,
    agents: list[str],
    endpoint: str,
    model: str,
    params: ScenarioParams,
    *,
    retries: int,
    image: str | None = None,
    turn_timeout: int = 300,
    infra_retries: int = 2,
    price: tuple[float, float] = (1.0, 10.0),
    extra_llm: str = "",
    extra_run: str = "",
) -> Path:
    """A sweep file of seed 0 in Docker, its model calls going through the gateway to `endpoint`."""
    sweep = tmp / "s.toml"
    image_line = f'image = "{image}"' if image is not None else ""
    sweep.write_text(
        textwrap.dedent(f"""
        name = "{name}"
        [scenarios]
        seeds = "0"
        turns = {params.turns}
        changes_per_turn = {params.changes_per_turn}
        [matrix]
        agents = {json.dumps(agents)}
        retries = [{retries}]
        [run]
        runtime = "docker"
        {image_line}
        turn_timeout = {turn_timeout}
        infra_retries = {infra_retries}
        {extra_run}
        [llm]
        endpoint = "{endpoint}"
        model = "{model}"
        {extra_llm}
        [llm.pricing."{model}"]
        input = {price[0]}
        output = {price[1]}
        """)
    )
    return sweep


def run_sweep(sweep: Path, state: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """`staminad run SWEEP --state-dir STATE` to its end (bounded), its output captured."""
    needs("e2e", "runs a real harness")
    needs("sweep", "runs a sweep")
    return subprocess.run(
        [sys.executable, "-m", "staminad.cli", "run", str(sweep), "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def attempt_rows(state: Path) -> list[tuple[int, int, int, str, str | None]]:
    """(turn, attempt, infra_try, outcome, infra_kind) of every attempt the run stored, in order."""
    with contextlib.closing(sqlite3.connect(state / "staminad.db")) as db:
        return db.execute("SELECT turn, attempt, infra_try, outcome, infra_kind FROM attempts ORDER BY id").fetchall()


def started_outcomes(state: Path, agent: str | None = None) -> list[tuple[int, int, str]]:
    """(turn, attempt, outcome) of every attempt in order, less those whose harness crashed before it made a
    single model call: a harness failing to start (vibe's app-server on a busy machine) is the infra retry the
    engine gives it, not part of the conversation a test checks. A crash after a call stays in."""
    query = (
        "SELECT a.turn, a.attempt, a.outcome FROM attempts a JOIN scenarios s ON s.id = a.scenario_id "
        "JOIN configurations c ON c.id = s.config_id WHERE NOT (a.infra_kind IS 'harness_crash' AND NOT EXISTS "
        "(SELECT 1 FROM llm_calls l WHERE l.attempt_id = a.id)) AND (? IS NULL OR c.agent = ?) ORDER BY a.id"
    )
    with contextlib.closing(sqlite3.connect(state / "staminad.db")) as db:
        return db.execute(query, (agent, agent)).fetchall()


def scenario_end(state: Path) -> tuple[str, int, str | None]:
    """(status, turns_passed, reason) of the run's one scenario."""
    with contextlib.closing(sqlite3.connect(state / "staminad.db")) as db:
        row = db.execute("SELECT status, turns_passed, reason FROM scenarios").fetchone()
    return row[0], row[1], row[2]


def rewrite_files(workspace: Path) -> str:
    """A shell command that rewrites the reference agent's files exactly."""
    parts = [f"echo {base64.b64encode((workspace / n).read_bytes()).decode()} | base64 -d > {n}" for n in FILES]
    return (
        f"mkdir -p {SERVER_PACKAGE} && "
        + " && ".join(parts)
        + f" && chmod +x run_server.sh && {COMPILE} && echo rewritten"
    )


def codex_sweep(
    tmp: Path,
    standin: StandIn,
    image: str,
    extra_llm: str = "",
    infra_retries: int = 2,
    agent: str = "codex",
    model: str = CODEX_MODEL,
) -> Path:
    """The codex tests' sweep (PARAMS, R=1) of `agent` and `model` through the stand-in; the chat harnesses' too."""
    return write_sweep(
        tmp,
        "codex-e2e",
        [agent],
        standin.url,
        model,
        PARAMS,
        retries=1,
        image=image,
        infra_retries=infra_retries,
        extra_llm=extra_llm,
    )
