"""CLI start: `staminad --version`, `--help` and a subcommand's `--help`, against a bare interpreter (issue 41).

Each command is run --runs times in a fresh interpreter (`python -m staminad.cli ...`, as the console script
does), interleaved with `python -c pass`; its CPU time (user + system of the child, which a busy shared machine
changes least) and wall time are the medians of its runs, and the ratio is to the bare interpreter's median CPU
in the same run. Before issue 41 every command imported the engine first: `--version` cost ~0.7 s of CPU, 23x a
bare interpreter.

Run: python benchmarks/bench_cli.py [--runs 9] [--smoke]
`--smoke`: 2 runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

CASES = {
    "bare python -c pass": ["-c", "pass"],
    "staminad --version": ["-m", "staminad.cli", "--version"],
    "staminad --help": ["-m", "staminad.cli", "--help"],
    "staminad status --help": ["-m", "staminad.cli", "status", "--help"],
    "staminad run --help": ["-m", "staminad.cli", "run", "--help"],
}


def once(argv: list[str]) -> tuple[float, float]:
    """(CPU, wall) seconds of one run of `python ARGV`."""
    before = os.times()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *argv], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system), wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--smoke", action="store_true", help="2 runs")
    args = ap.parse_args()
    runs = 2 if args.smoke else args.runs
    cpu: dict[str, list[float]] = {name: [] for name in CASES}
    wall: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(runs):  # interleaved, so a load change on the machine hits every case alike
        for name, argv in CASES.items():
            c, w = once(argv)
            cpu[name].append(c)
            wall[name].append(w)
    bare = statistics.median(cpu["bare python -c pass"])
    print(f"CLI start, median of {runs} runs (CPU = user + system of the child):")
    for name in CASES:
        c, w = statistics.median(cpu[name]), statistics.median(wall[name])
        print(f"  {name:24} CPU {c * 1000:6.0f} ms  wall {w * 1000:6.0f} ms  {c / bare:5.1f}x bare CPU")


if __name__ == "__main__":
    main()
