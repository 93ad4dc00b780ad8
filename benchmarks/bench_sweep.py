"""A sweep of the reference agent, timed per turn: harness, marker latency, server start, suite, teardown.

Targets (issue 4): marker latency p99 under 50 ms; engine overhead per turn (everything except the
harness run, server start and suite) under 20 ms. The full benchmark is 20 scenarios x 100 turns
on each runtime; `--seeds` and `--turns` scale it down.

`--smoke`: one scenario of 2 turns.

Run: python benchmarks/bench_sweep.py [--runtime local|docker] [--seeds 0-19] [--turns 100] [--parallel 2] [--smoke]
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from staminad.engine.config import load_sweep
from staminad.engine.sweep import run_sweep
from staminad.sandbox.local import local_factory
from staminad.sandbox.ports import PortAllocator


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", choices=("local", "docker"), default="local")
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--turns", type=int, default=100)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--smoke", action="store_true", help="one scenario of 2 turns")
    args = ap.parse_args()
    if args.smoke:
        args.seeds, args.turns, args.parallel = "0", 2, 1
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        sweep_file = tmp / "bench.toml"
        sweep_file.write_text(
            f'name = "bench"\n[scenarios]\nseeds = "{args.seeds}"\nturns = {args.turns}\n'
            f'[matrix]\nagents = ["reference"]\nretries = [0]\n'
            f'[run]\nruntime = "{args.runtime}"\nparallel = {args.parallel}\n'
        )
        sweep, fp = load_sweep(sweep_file)
        ports = PortAllocator()
        if args.runtime == "docker":
            from staminad.sandbox.docker.bindsandbox import docker_factory

            factory = docker_factory(sweep.run, ports)
        else:
            factory = local_factory(ports)
        t0 = time.perf_counter()
        summaries = anyio.run(run_sweep, sweep, fp, tmp / "state", factory, lambda data: None, None)
        wall = time.perf_counter() - t0
        with contextlib.closing(sqlite3.connect(tmp / "state" / "staminad.db")) as db:
            rows = db.execute(
                "SELECT harness_seconds, marker_latency, server_seconds, suite_seconds, teardown_seconds, "
                "finished_at - launched_at FROM attempts WHERE outcome = 'pass'"
            ).fetchall()
    harness, marker, server, suite, teardown, total = (list(col) for col in zip(*rows, strict=True))
    overhead = [t - h - m - s - u - d for h, m, s, u, d, t in rows]
    s = summaries[0]
    print(
        f"{args.runtime}: {s.scenarios} scenarios x {args.turns} turns, parallel {args.parallel}: wall {wall:.1f} s, "
        f"{len(rows)} turns passed ({s.mean_turns:.1f} per scenario), {len(rows) / wall:.2f} turns/s"
    )
    for name, vals in (
        ("harness", harness),
        ("marker latency", marker),
        ("server start", server),
        ("suite", suite),
        ("teardown", teardown),
        ("engine overhead", overhead),
        ("whole turn", total),
    ):
        print(f"  {name:16} median {statistics.median(vals) * 1000:8.1f} ms   p99 {pct(vals, 99) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
