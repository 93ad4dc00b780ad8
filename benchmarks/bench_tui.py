"""stamina-tui under a live load: 100 scenarios producing 200 events per second.

A daemon process holds a real sweep of 100 scenarios (a manual agent keeps them all running) and
publishes engine events for them on its bus at the given rate (attempt started, harness done, suite
started, attempt tested: the same kinds and fields the engine sends). A separate TUI process, on the
sweep view so every event redraws a row, records for each event the time from `Event.at` (when it
left the engine) to the end of the first screen refresh after the app applied it. Reported: latency
p50 / p99 per run and their medians over the runs, and the TUI process's CPU (percent of one core).

Run: python benchmarks/bench_tui.py [--rate 200] [--seconds 10] [--runs 3] [--screen sweep|events] [--size 160x50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import anyio

SCENARIOS = 100


def _sweep(tmp: Path) -> Path:
    path = tmp / "load.toml"
    path.write_text(
        textwrap.dedent(f"""
        name = "load"
        [scenarios]
        seeds = "0-{SCENARIOS - 1}"
        turns = 1
        [matrix]
        agents = ["manual"]
        [run]
        runtime = "local"
        parallel = {SCENARIOS}
        turn_timeout = 3600
        """)
    )
    return path


# --- the daemon process: a real sweep, then synthetic engine events at a fixed rate --------------


async def daemon_main(state: Path, rate: float, seconds: float, ready: Path) -> None:
    from protocol import Ok, Submit, Subscribe
    from protocol.client import Client
    from staminad.daemon.service import Daemon

    daemon = Daemon(state, runtime="local", max_parallel=SCENARIOS)
    async with anyio.create_task_group() as tg:
        await tg.start(daemon.serve)
        sweep = _sweep(state.parent)
        async with Client(state / "staminad.sock") as client, Client(state / "staminad.sock") as watch:
            assert isinstance(await watch.request(Subscribe(kinds=("manual_prompt",))), Ok)
            await client.request(Submit(sweep_toml=sweep.read_text(), base_dir=str(sweep.parent)))
            ids = set()
            async for event in watch.events():
                ids.add(getattr(event.data, "scenario", -1))
                if len(ids) == SCENARIOS:
                    break
        ready.write_text("ready")
        while not (state.parent / "go").exists():  # the TUI process says when it shows the sweep
            await anyio.sleep(0.05)
        order = sorted(ids)
        kinds = ("attempt_started", "harness_done", "suite_started", "attempt_tested")
        interval, start, n = 1.0 / rate, time.perf_counter(), 0
        while time.perf_counter() - start < seconds:
            sid = order[n % SCENARIOS]
            kind = kinds[(n // SCENARIOS) % len(kinds)]
            data = {"scenario": sid, "turn": 0, "attempt": 1, "infra_try": 0}
            if kind == "attempt_tested":
                data.update(passed=False, tests=131, failed_tests=2, categories="validation")
            daemon.bus.publish("load", kind, data)
            n += 1
            await anyio.sleep(max(0.0, start + n * interval - time.perf_counter()))
        daemon.bus.publish("load", "bench_done", {"published": n})
        await anyio.sleep(2)
        daemon.stop()


# --- the TUI process: headless app on the sweep view, recording latencies -------------------------


def tui_main(socket_path: Path, out: Path, screen: str, size: tuple[int, int]) -> None:
    from protocol import Event
    from tui.app import make_app
    from tui.screens.events import EventLogScreen
    from tui.screens.sweep import SweepScreen

    app = make_app(socket_path)
    latencies: list[float] = []
    cpu: list[float] = []

    def shown(batch: list[Event]) -> None:
        now = time.time()
        for event in batch:
            if event.kind == "bench_done":
                cpu.append(time.process_time())
                app.exit()
            elif event.kind != "manual_prompt" and cpu:
                latencies.append(now - event.at)

    async def attach() -> None:
        while "load" not in app.board.scenarios or len(app.board.scenarios["load"]) < SCENARIOS:
            await anyio.sleep(0.05)
        app.push_screen(SweepScreen("load") if screen == "sweep" else EventLogScreen())
        await anyio.sleep(0.5)
        cpu.append(time.process_time())
        cpu.append(time.perf_counter())
        (socket_path.parent.parent / "go").write_text("go")

    app.on_shown = shown
    app.call_later(lambda: app.run_worker(attach()))
    profile = os.environ.get("BENCH_TUI_PROFILE")  # a path: write a cProfile of the TUI process there
    if profile:
        import cProfile

        with cProfile.Profile() as prof:
            app.run(headless=True, size=size)
        prof.dump_stats(profile)
    else:
        app.run(headless=True, size=size)
    busy, wall = cpu[-1] - cpu[0], time.perf_counter() - cpu[1]
    out.write_text(json.dumps({"latencies": latencies, "cpu_percent": 100 * busy / wall}))


def one_run(rate: float, seconds: float, screen: str, size: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-tui-") as tmp:
        state, ready, out = Path(tmp) / "st", Path(tmp) / "ready", Path(tmp) / "out.json"
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        daemon = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--daemon",
                str(state),
                "--rate",
                str(rate),
                "--seconds",
                str(seconds),
                "--ready",
                str(ready),
            ],
            env=env,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while not ready.exists():
            if time.monotonic() > deadline or daemon.poll() is not None:
                raise RuntimeError("the daemon process did not get ready")
            time.sleep(0.05)
        tui = subprocess.run(
            [
                sys.executable,
                __file__,
                "--tui",
                str(state / "staminad.sock"),
                "--out",
                str(out),
                "--screen",
                screen,
                "--size",
                size,
            ],
            env=env,
            timeout=seconds + 120,
        )
        daemon.wait(timeout=60)
        if tui.returncode != 0:
            raise RuntimeError("the TUI process failed")
        result = json.loads(out.read_text())
        lat = sorted(result["latencies"])
        return {
            "events": len(lat),
            "p50_ms": 1000 * lat[len(lat) // 2],
            "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))],
            "cpu": result["cpu_percent"],
        }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--screen",
        choices=("sweep", "events"),
        default="sweep",
        help="the screen watched: the sweep view (a row per scenario) or the event log",
    )
    ap.add_argument("--size", default="160x50", help="terminal COLUMNSxLINES (default 160x50)")
    ap.add_argument("--daemon", type=Path)
    ap.add_argument("--ready", type=Path)
    ap.add_argument("--tui", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.daemon:
        anyio.run(daemon_main, args.daemon, args.rate, args.seconds, args.ready)
        return 0
    if args.tui:
        cols, _, lines = args.size.partition("x")
        tui_main(args.tui, args.out, args.screen, (int(cols), int(lines)))
        return 0
    runs = []
    for i in range(args.runs):
        r = one_run(args.rate, args.seconds, args.screen, args.size)
        runs.append(r)
        print(
            f"run {i + 1}: {r['events']:.0f} events on screen, latency p50 {r['p50_ms']:.1f} ms, "
            f"p99 {r['p99_ms']:.1f} ms, TUI CPU {r['cpu']:.0f}% of a core",
            flush=True,
        )
    p50 = statistics.median(r["p50_ms"] for r in runs)
    p99 = statistics.median(r["p99_ms"] for r in runs)
    cpu = statistics.median(r["cpu"] for r in runs)
    print(
        f"{args.screen} screen at {args.size}, median of {args.runs} runs at {args.rate:.0f} events/s over "
        f"{SCENARIOS} scenarios: "
        f"p50 {p50:.1f} ms, p99 {p99:.1f} ms (target p99 < 100 ms: {p99 / 100:.2f}x of target), "
        f"TUI CPU {cpu:.0f}% of a core"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
