"""Docker against local, phase by phase: the suite, the server's teardown and the engine's own work per turn.

The reference agent runs one scenario of --turns turns through the engine with the local runtime and
with a sealed Docker sandbox (bind mounts, the container's launcher), and, as the way it was before,
with the suite reaching the server through its published port (Docker's userland proxy) rather than
at the container's address on the project's network (`DockerSandbox.direct`). The three run in turn,
--runs times, in the same process, so each figure has its local anchor from the same minutes of the
same machine.

Per turn (turn 0, which creates the sandbox, left out), as the engine recorded it:
- suite: the suite's run against the started server (`suite_seconds`);
- teardown: the server's stop, until nothing of the agent runs (`teardown_seconds`);
- overhead: from one attempt's start to the next's, less the harness run, the marker latency, the
  server start, the suite and the teardown: what the engine itself does per turn.

Reported: the median over runs of each run's median per turn, the spread of the run medians, and
the ratio to local. Goals (issue 31): suite within 10% of local, teardown < 15 ms, overhead < 20 ms.

Run: python benchmarks/bench_docker_phases.py [--turns 20] [--runs 3] [--seed 0] [--image TAG] [--smoke]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from protocol.events import AttemptStarted, EventData, ScenarioFinished
from staminad.bench.pack import Pack, build_pack, verify_pack
from staminad.bench.scenario import ScenarioParams
from staminad.engine.config import load_sweep
from staminad.engine.sweep import run_sweep
from staminad.sandbox.docker.bindsandbox import DockerSandbox, docker_factory
from staminad.sandbox.docker.image import recipe
from staminad.sandbox.local import local_factory
from staminad.sandbox.ports import PortAllocator

WAYS = ("local", "docker", "docker, published port")
PHASES = ("suite", "teardown", "overhead")


def one_run(way: str, args: argparse.Namespace, pack: Pack) -> dict[str, float]:
    """Median seconds per turn of each phase for one sweep run the given way."""
    runtime = "local" if way == "local" else "docker"
    starts: dict[int, float] = {}
    finished: list[float] = []

    def emit(data: EventData) -> None:
        if isinstance(data, AttemptStarted):
            starts[data.turn] = time.perf_counter()
        elif isinstance(data, ScenarioFinished):
            finished.append(time.perf_counter())

    with tempfile.TemporaryDirectory(prefix="bench-phases-") as tmp_s:
        tmp = Path(tmp_s)
        sweep_file = tmp / "bench.toml"
        sweep_file.write_text(
            f'name = "phases"\n[scenarios]\nseeds = "{args.seed}"\nturns = {args.turns}\n'
            '[matrix]\nagents = ["reference"]\nretries = [0]\n'
            f'[run]\nruntime = "{runtime}"\nparallel = 1\nturn_timeout = 120\nimage = "{args.image}"\n'
        )
        sweep, fp = load_sweep(sweep_file)
        DockerSandbox.direct = way == "docker"
        factory = docker_factory(sweep.run, PortAllocator()) if runtime == "docker" else local_factory(PortAllocator())
        anyio.run(run_sweep, sweep, fp, tmp / "state", factory, emit, pack)
        conn = sqlite3.connect(tmp / "state" / "staminad.db")
        rows = conn.execute(
            "SELECT turn, outcome, harness_seconds, marker_latency, server_seconds, suite_seconds, teardown_seconds "
            "FROM attempts ORDER BY turn, attempt, infra_try"
        ).fetchall()
        conn.close()
    if not all(r[1] == "pass" for r in rows):
        raise SystemExit(f"{way}: the reference agent failed a turn")
    suite, teardown, overhead = [], [], []
    for turn, _, harness, marker, server, suite_s, teardown_s in rows:
        end = starts.get(turn + 1, finished[0] if finished else None)
        if turn == 0 or end is None or turn not in starts:
            continue
        suite.append(suite_s or 0)
        teardown.append(teardown_s or 0)
        spent = (harness or 0) + (marker or 0) + (server or 0) + (suite_s or 0) + (teardown_s or 0)
        overhead.append(end - starts[turn] - spent)
    if not suite:
        raise SystemExit(f"{way}: no turn past the first was recorded (use --turns 2 or more)")
    return {
        "suite": statistics.median(suite),
        "teardown": statistics.median(teardown),
        "overhead": statistics.median(overhead),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--image", default=None, help="the sandbox image (default: the one `sb image build` makes)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: 3 turns, one run (checks it runs, times nothing)")
    args = ap.parse_args()
    if args.smoke:
        args.turns, args.runs = 3, 1
    args.image = args.image or recipe().tag()
    pack = verify_pack(build_pack([args.seed], ScenarioParams(turns=args.turns)))
    results: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    for _ in range(args.runs):
        for way in WAYS:  # in turn, so a busy minute of the machine falls on every way alike
            results[way].append(one_run(way, args, pack))
    print(
        f"seed {args.seed}, {args.turns} turns (turn 0 left out), {args.runs} runs; "
        "median of run medians per turn [min-max of runs], ratio to local"
    )
    local = {phase: statistics.median(r[phase] for r in results["local"]) for phase in PHASES}
    for phase in PHASES:
        cells = []
        for way in WAYS:
            vals = [r[phase] * 1000 for r in results[way]]
            med = statistics.median(vals)
            ratio = med / (local[phase] * 1000) if local[phase] > 0 else float("nan")
            cells.append(f"{way} {med:7.1f} ms [{min(vals):.1f}-{max(vals):.1f}] {ratio:4.2f}x")
        print(f"  {phase:9} " + " | ".join(cells))


if __name__ == "__main__":
    main()
