"""Engine overhead per turn over a long scenario: the reference agent through the engine for 1,000 turns (local).

Overhead of turn t = the time from its attempt starting to the next attempt starting (or the
scenario finishing), less what is not the engine's: the harness run, the marker latency, the
server start, the suite (its generation and run) and the server teardown, all as the engine
recorded them. What remains is the engine's own per-turn work: store reads and writes, prompt
and job files, the launch, LoC counting, events. Reported as the median over windows of turns
(default 1-10, 490-500, 990-1000), and their ratio to the first window.

The scenario uses balanced sampler weights by default (`--weights steady`: no entity added or
deleted, adds and removals of fields, analytics, actions, conditions and effects equally likely),
so the suite stays ~300 tests and the run takes minutes. With the paper's uniform sampler the
design grows to ~370 entities and ~16,000 tests per suite by turn 1,000 (over 20 million requests
in all): the suite's cost grows with the design by definition, the engine's must not.

After the run, the store's per-step reads are timed on the run's own database at the window
ends: the full `attempts()` read the engine did before, against the narrow reads it does now.

With `--runtime docker` the same run goes through a sealed container (the launch through the
container's launcher, see `staminad.sandbox.inside.launcher`); the harness's own time is what the wrapper
records inside, so the launch's latency counts as the engine's.

Since issue 41 the next attempt's suite is made once this attempt's suite has run (`engine.suites`), and the
wait for a suite not yet made falls between the server start and the suite's run: it counts as the engine's.
Measured in one run each, side by side on a busy 2-core box (load ~15), `--turns 80 --weights uniform --windows
1-10,70-80` (2,140 tests at turn 80; harness ~400 ms there, so generation was hidden before too): before, turns
70-80 0.61x turns 1-10 (29.9 vs 49.0 ms); after, 0.98x (57.0 vs 58.4 ms), with teardown 19 -> 58 ms median: in
process the made-ahead suite's thread takes the GIL from the teardown and the next launch (the daemon makes it in
a worker process).

Turn 1,000 with the defaults (the reference agent's harness ~105 ms, faster than making its suite; the daemon's 2
workers), on a quiet 2-core box, two runs a session apart: turns 1-10 / 490-500 / 990-1000 took 8.1 / 9.5 / 9.3 ms
(1.18x, 1.15x) and 9.0 / 8.3 / 10.3 ms (0.92x, 1.15x); before issue 41, 190.7 ms at turns 990-1000, 19.7x. The
store of the first run (`--keep`, then `--analyze`) puts 1.7 ms of turn 1's overhead between attempts and 2.6 ms
of turn 900's: the code kept, the step reads (`turns_passed` counts an index's entries, 0.3 -> 0.5 ms) and the new
row; inside the attempt 6.5 -> 7.0 ms, as the verdict's record grows with the suite (2.3 -> 9 KB of results).
A session before, on a box about 2.7x slower (harness 168 ms and suite 1.6 s a turn against 105 ms and 0.58 s):
12.9 / 15.0 / 17.8 ms (1.38x).

Run: python benchmarks/bench_engine_turns.py [--turns 1000] [--seed 0] [--weights steady|uniform]
     [--runtime local|docker [--no-launcher] [--workspace mount|volume]] [--keep DB] [--analyze DB] [--smoke]

`--smoke`: 4 turns, windows 1-2 and 3-4.

With `--workspace volume` the sandbox's files live in the engine's volumes: every operation goes over
the launcher's exec stream and each tested turn ends with a workspace snapshot, all counted as the
engine's. Measured over 20 turns on one busy machine (2 cores, load ~14): bind mounts 31-61 ms per
turn (the code before the sandbox contract: 45-57 ms, interleaved runs), volumes 138-141 ms, of
which the snapshot (get_archive, gzip) is ~45-60 ms and the line count as the agent ~18-38 ms.
"""

from __future__ import annotations

import argparse
import itertools
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from protocol.events import AttemptStarted, EventData, ScenarioFinished
from staminad.bench.pack import Pack, build_pack, verify_pack
from staminad.bench.scenario import ScenarioParams
from staminad.engine.config import SweepFile, load_sweep
from staminad.engine.spec import EventSink
from staminad.engine.summary import ConfigSummary
from staminad.engine.sweep import run_sweep
from staminad.sandbox.base import SandboxFactory
from staminad.sandbox.local import local_factory
from staminad.sandbox.ports import PortAllocator
from staminad.suite.cpus import default_size
from staminad.suite.pool import WorkerPool
from state.store import HarnessEnd, Store, Verdict

STEADY = {
    "add_entity": 0.0,
    "delete_entity": 0.0,
    "rename_entity": 1.0,
    "add_field": 1.0,
    "delete_field": 1.0,
    "rename_field": 1.0,
    "change_constraints": 1.0,
    "add_analytics": 1.0,
    "delete_analytics": 1.0,
    "add_action": 1.0,
    "remove_action": 1.0,
    "add_condition": 1.0,
    "remove_condition": 1.0,
    "add_effect": 1.0,
    "remove_effect": 1.0,
    "add_enum_value": 0.0,
}


def windows(spec: str, turns: int) -> list[tuple[int, int]]:
    out = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if b <= turns:
            out.append((a, b))
    return out


async def step_reads(db: Path, scenario_id: int, upto: int, repeats: int = 20) -> tuple[float, float]:
    """(full read, narrow reads) in ms, median, on a copy of the store cut at turn `upto`."""
    cut = db.with_name(f"cut-{upto}.db")
    src = sqlite3.connect(db)
    dst = sqlite3.connect(cut)
    src.backup(dst)
    src.close()
    dst.execute("DELETE FROM attempts WHERE turn > ?", (upto,))
    dst.commit()
    dst.close()
    async with await Store.open(cut) as store:
        full, narrow = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            await store.attempts(scenario_id)
            t1 = time.perf_counter()
            await store.latest_turn_attempts(scenario_id)
            await store.turns_passed(scenario_id)
            t2 = time.perf_counter()
            full.append(t1 - t0)
            narrow.append(t2 - t1)
    return statistics.median(full) * 1000, statistics.median(narrow) * 1000


def analyze(db: Path, spec: str) -> None:
    """Engine overhead per turn from a run's store alone (a finished or still-running run), by window.

    Turn t's cycle is the time between its attempt's `launched_at` and the next one's; the step's
    store reads happen just before `launched_at`, so they fall in the previous turn's cycle.
    """
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = conn.execute(
        "SELECT turn, launched_at, harness_seconds, marker_latency, server_seconds, suite_seconds, "
        "teardown_seconds, total_tests, finished_at FROM attempts WHERE outcome = 'pass' ORDER BY turn"
    ).fetchall()
    conn.close()
    overhead = {r[0]: (n[1] - r[1]) - sum(x or 0 for x in r[2:7]) for r, n in itertools.pairwise(rows)}
    # Where it goes: from the outcome's record to the next launch (snapshot, step reads, next prompt, launch
    # call), and the rest, inside the attempt (the launch's latency, the marker's bookkeeping and line count,
    # the health check and the outcome's record).
    between = {r[0]: n[1] - r[8] for r, n in itertools.pairwise(rows) if r[8]}
    tests = {r[0]: r[7] for r in rows}
    print(f"{db}: {len(rows)} turns recorded")
    spans = [(a, b) for a, b in windows(spec, 10**9) if b in overhead]
    first = None
    for a, b in spans:
        med = statistics.median(overhead[t] for t in range(a, b + 1) if t in overhead) * 1000
        first = first or med
        gap = statistics.median(between[t] for t in range(a, b + 1) if t in between) * 1000
        print(
            f"  turns {a:4}-{b:4}: engine overhead median {med:6.1f} ms ({med / first:4.2f}x turns "
            f"{spans[0][0]}-{spans[0][1]}; {gap:5.1f} ms of it between attempts), "
            f"suite {statistics.median(tests[t] for t in range(a, b + 1)):.0f} tests"
        )


async def time_reads(turns: int, params: ScenarioParams, seed: int, at: list[int], tmp: Path) -> None:
    """A store filled with `turns` passed turns (the scenario's real prompts); the step reads timed at `at` rows."""
    from staminad.bench.scenario import generate
    from staminad.bench.texts import change_prompt, initial_prompt

    scenario = generate(seed, params)
    prompts, state = [initial_prompt(params.language)], scenario.initial
    for batch in scenario.turns:
        text, state = change_prompt(batch, state)
        prompts.append(text)
    async with await Store.open(tmp / "reads.db") as store:
        await store.ensure_sweep("r", "r", "fp", "{}")
        scenario_id = (
            await store.ensure_scenario(await store.ensure_configuration("r", "c", "reference", 0, "detailed"), seed)
        ).id
        for turn, prompt in enumerate(prompts):
            row = await store.begin_attempt(scenario_id, turn, 1, 0, "turn", prompt)
            await store.harness_done(row.id, HarnessEnd(harness_seconds=None, loc=400))
            await store.tested(row.id, Verdict(outcome="pass"))
            if turn in at:
                full, narrow = [], []
                for _ in range(20):
                    t0 = time.perf_counter()
                    await store.attempts(scenario_id)
                    t1 = time.perf_counter()
                    await store.latest_turn_attempts(scenario_id)
                    await store.turns_passed(scenario_id)
                    full.append(t1 - t0)
                    narrow.append(time.perf_counter() - t1)
                print(
                    f"  {turn + 1:5} rows: full attempts() {statistics.median(full) * 1000:7.2f} ms, "
                    f"narrow reads {statistics.median(narrow) * 1000:5.2f} ms (median of 20)"
                )


async def pooled(
    workers: int, sweep: SweepFile, fp: str, state: Path, factory: SandboxFactory, emit: EventSink, pack: Pack
) -> list[ConfigSummary]:
    """`run_sweep(...)`, its suites in `workers` worker processes (0: in threads)."""
    pool = WorkerPool(workers) if workers else None
    async with anyio.create_task_group() as tg:
        if pool is not None:
            await tg.start(pool.serve)
        summaries = await run_sweep(sweep, fp, state, factory, emit, pack, workers=pool)
        tg.cancel_scope.cancel()
    return summaries


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--weights", choices=("steady", "uniform"), default="steady")
    ap.add_argument("--windows", default="1-10,490-500,990-1000")
    ap.add_argument("--analyze", type=Path, help="only report the windows of an existing run's staminad.db")
    ap.add_argument("--reads", action="store_true", help="only time the store's step reads against row counts")
    ap.add_argument("--runtime", choices=("local", "docker"), default="local")
    ap.add_argument("--image", default="staminabench/sandbox:latest", help="the sandbox image (--runtime docker)")
    ap.add_argument(
        "--no-launcher",
        action="store_true",
        help="--runtime docker: every root-side operation by `docker exec`, as before the launcher",
    )
    ap.add_argument(
        "--workspace",
        choices=("mount", "volume"),
        default="mount",
        help="--runtime docker: the sandbox's files bind-mounted, or in the engine's volumes (snapshot per turn)",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=default_size(),
        help=f"suites made and run in N worker processes (default: as many as the daemon's, {default_size()} here; "
        "0: in threads of this process)",
    )
    ap.add_argument("--smoke", action="store_true", help="4 turns, windows 1-2 and 3-4")
    ap.add_argument("--keep", type=Path, help="copy the run's staminad.db here (for --analyze later)")
    args = ap.parse_args()
    if args.smoke:
        args.turns, args.windows = 4, "1-2,3-4"
    if args.reads:
        print(f"step reads, seed {args.seed}, {args.weights} weights (real prompt texts):")
        with tempfile.TemporaryDirectory() as tmp_r:
            params = ScenarioParams(turns=args.turns, weights=STEADY if args.weights == "steady" else None)
            anyio.run(time_reads, args.turns, params, args.seed, [9, 99, 499, 999, 1499], Path(tmp_r))
        return
    if args.analyze:
        analyze(args.analyze, args.windows)
        return
    params = ScenarioParams(turns=args.turns, weights=STEADY if args.weights == "steady" else None)
    t0 = time.perf_counter()
    pack = verify_pack(build_pack([args.seed], params))
    print(
        f"seed {args.seed}, {args.turns} turns, {args.weights} weights: pack built in {time.perf_counter() - t0:.1f} s"
    )
    starts: dict[int, float] = {}
    finished: list[float] = []

    def emit(data: EventData) -> None:
        if isinstance(data, AttemptStarted):
            starts[data.turn] = time.perf_counter()
        elif isinstance(data, ScenarioFinished):
            finished.append(time.perf_counter())

    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        sweep_file = tmp / "bench.toml"
        sweep_file.write_text(
            f'name = "turns"\n[scenarios]\nseeds = "{args.seed}"\nturns = {args.turns}\n'
            '[matrix]\nagents = ["reference"]\nretries = [0]\n'
            f'[run]\nruntime = "{args.runtime}"\nparallel = 1\nturn_timeout = 120\n'
            f'image = "{args.image}"\nworkspace = "{args.workspace}"\n'
        )
        sweep, fp = load_sweep(sweep_file)
        factory = local_factory(PortAllocator())
        if args.runtime == "docker":
            from staminad.sandbox.docker.bindsandbox import DockerSandbox, docker_factory

            DockerSandbox.use_launcher = not args.no_launcher
            factory = docker_factory(sweep.run, PortAllocator())
            if args.workspace == "volume":
                from staminad.sandbox.docker.volumefactory import volume_factory

                factory = volume_factory(sweep.run)
        t0 = time.perf_counter()
        summaries = anyio.run(pooled, args.workers, sweep, fp, tmp / "state", factory, emit, pack)
        wall = time.perf_counter() - t0
        db = tmp / "state" / "staminad.db"
        if args.keep:
            keep = sqlite3.connect(args.keep)
            with sqlite3.connect(db) as src:
                src.backup(keep)
            keep.close()
        conn = sqlite3.connect(db)
        rows = conn.execute(
            "SELECT turn, scenario_id, outcome, harness_seconds, marker_latency, server_seconds, "
            "suite_seconds, teardown_seconds, total_tests FROM attempts ORDER BY turn, attempt, "
            "infra_try"
        ).fetchall()
        conn.close()
        scenario_id = int(rows[0][1])
        reads = {b: anyio.run(step_reads, db, scenario_id, b) for _, b in windows(args.windows, args.turns)}
    s = summaries[0]
    print(f"wall {wall:.0f} s for {len(rows)} attempts; {s.mean_turns:.0f} turns passed")
    assert all(r[2] == "pass" for r in rows), "the reference agent failed a turn"
    overhead: dict[int, float] = {}
    tests: dict[int, int] = {}
    for turn, _, _, harness, marker, server, suite, teardown, total in rows:
        end = starts.get(turn + 1, finished[0] if finished else None)
        if end is None or turn not in starts:
            continue
        overhead[turn] = (
            (end - starts[turn]) - (harness or 0) - (marker or 0) - (server or 0) - (suite or 0) - (teardown or 0)
        )
        tests[turn] = total or 0
    parts = {
        name: statistics.median(r[i] or 0 for r in rows) * 1000
        for i, name in ((3, "harness"), (4, "marker"), (5, "server start"), (6, "suite"), (7, "teardown"))
    }
    print("  median per turn, all turns: " + ", ".join(f"{k} {v:.0f} ms" for k, v in parts.items()))
    spans = windows(args.windows, args.turns)
    first = None
    for a, b in spans:
        vals = [overhead[t] for t in range(a, b + 1) if t in overhead]
        med = statistics.median(vals) * 1000
        first = first or med
        full, narrow = reads[b]
        n_tests = statistics.median(tests[t] for t in range(a, b + 1) if t in tests)
        print(
            f"  turns {a:4}-{b:4}: engine overhead median {med:6.1f} ms ({med / first:4.2f}x turns "
            f"{spans[0][0]}-{spans[0][1]}), suite {n_tests:.0f} tests | step reads at turn {b}: "
            f"full attempts() {full:6.2f} ms, narrow {narrow:5.2f} ms"
        )


if __name__ == "__main__":
    main()
