"""Time to generate and render one scenario (issue target: 100 turns < 0.2 s, 1,000 turns < 3 s).

Run: python benchmarks/bench_generate.py [--repeats 5]
Reports the median over repeats and several seeds, for both samplers.
"""

from __future__ import annotations

import argparse
import statistics
import time

from staminad.bench.pack import scenario_texts
from staminad.bench.scenario import ScenarioParams, generate


def once(seed: int, turns: int, sampler: str) -> float:
    start = time.perf_counter()
    params = ScenarioParams(turns=turns, sampler=sampler)  # type: ignore[arg-type]
    scenario = generate(seed, params)
    scenario_texts(scenario, params.language)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    for turns, target in ((100, 0.2), (1000, 3.0)):
        for sampler in ("uniform", "weighted"):
            times = [once(seed, turns, sampler) for seed in range(args.repeats)]
            med = statistics.median(times)
            print(
                f"{turns:5} turns  {sampler:8}  median {med:.3f} s  (min {min(times):.3f}, max {max(times):.3f})"
                f"  target {target} s  -> {med / target:.2f}x of target"
            )


if __name__ == "__main__":
    main()
