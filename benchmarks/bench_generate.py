"""Time to generate and render one scenario (issue targets: 100 turns < 0.2 s, 1,000 turns < 3 s).

For 100 and 1,000 turns and both samplers, each of --seeds seeds is generated and rendered (its
spec and every prompt, as a pack holds them) --runs times; a seed's figure is the median of its
runs, and the report is the median over seeds (with their min and max), in wall and CPU seconds
(CPU time is what a busy shared machine changes least). `--smoke`: 5 and 20 turns, 2 seeds, 1 run.

Run: python benchmarks/bench_generate.py [--seeds 5] [--runs 3] [--turns 100,1000] [--smoke]
"""

from __future__ import annotations

import argparse
import statistics
import time

from staminad.bench.pack import scenario_texts
from staminad.bench.scenario import ScenarioParams, generate

TARGETS = {100: 0.2, 1000: 3.0}  # seconds, from the issues


def once(seed: int, turns: int, sampler: str) -> tuple[float, float]:
    """(wall, CPU) seconds to generate one scenario and render its texts."""
    wall, cpu = time.perf_counter(), time.process_time()
    params = ScenarioParams(turns=turns, sampler=sampler)  # type: ignore[arg-type]
    scenario = generate(seed, params, keep_steps=True)  # as a pack is built
    scenario_texts(scenario, params.language)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--turns", default="100,1000")
    ap.add_argument("--smoke", action="store_true", help="5 and 20 turns, 2 seeds, 1 run")
    args = ap.parse_args()
    if args.smoke:
        args.seeds, args.runs, args.turns = 2, 1, "5,20"
    print(f"median over {args.seeds} seeds of each seed's median of {args.runs} runs; [min-max over seeds]")
    for turns in (int(t) for t in args.turns.split(",")):
        for sampler in ("uniform", "weighted"):
            walls, cpus = [], []
            for seed in range(args.seeds):
                runs = [once(seed, turns, sampler) for _ in range(args.runs)]
                walls.append(statistics.median(r[0] for r in runs))
                cpus.append(statistics.median(r[1] for r in runs))
            wall, cpu = statistics.median(walls), statistics.median(cpus)
            target = TARGETS.get(turns)
            goal = f"  target {target} s -> {wall / target:.2f}x of target" if target else ""
            print(
                f"{turns:5} turns  {sampler:8}  wall {wall:.3f} s [{min(walls):.3f}-{max(walls):.3f}]  "
                f"CPU {cpu:.3f} s [{min(cpus):.3f}-{max(cpus):.3f}]{goal}",
                flush=True,
            )


if __name__ == "__main__":
    main()
