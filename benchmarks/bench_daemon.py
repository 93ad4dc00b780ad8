"""The daemon under load: N concurrent scenarios of a fast deterministic agent (the reference agent).

Reports daemon CPU seconds and peak RSS per scenario, events per second delivered to 5 subscribers,
store commits per second (4 per attempt: begin, harness done, tested, scenario progress; plus 2 per
scenario), and the time to resume after kill -9 (socket ready, then first attempt event).

Run: python benchmarks/bench_daemon.py [--scenarios 100] [--turns 2]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio

from protocol import ListSweeps, Subscribe
from protocol.client import Client

CLI = [sys.executable, "-m", "staminad.cli"]


def proc_stats(pid: int) -> tuple[float, int]:
    """(CPU seconds, peak RSS bytes) of a process from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    peak = next(
        int(line.split()[1]) * 1024
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmHWM:")
    )
    return cpu, peak


def start(state: Path) -> tuple[subprocess.Popen[bytes], float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*CLI, "start", "--state-dir", str(state), "--runtime", "local", "--parallel", "200"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    while True:
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(state / "staminad.sock"))
            return proc, time.perf_counter() - t0
        except OSError:
            time.sleep(0.01)


def subscriber(state: Path, counts: list[int], i: int, stop: threading.Event) -> None:
    async def run() -> None:
        async with Client(state / "staminad.sock") as client:
            await client.request(Subscribe())
            async for _ in client.events():
                counts[i] += 1
                if stop.is_set():
                    return

    with contextlib.suppress(Exception):  # the connection ends when the benchmark kills the daemon
        anyio.run(run)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", type=int, default=100)
    ap.add_argument("--turns", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        state = tmp / "state"
        sweep = tmp / "load.toml"
        sweep.write_text(
            f'name = "load"\n[scenarios]\nseeds = "0-{args.scenarios - 1}"\nturns = {args.turns}\n'
            f'[matrix]\nagents = ["reference"]\nretries = [0]\n[run]\nruntime = "local"\n'
            f"parallel = {args.scenarios}\nturn_timeout = 300\nserver_start_timeout = 120\n"
        )
        proc, _ = start(state)
        counts = [0] * 5
        stop = threading.Event()
        threads = [threading.Thread(target=subscriber, args=(state, counts, i, stop), daemon=True) for i in range(5)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        t0 = time.perf_counter()
        subprocess.run([*CLI, "submit", str(sweep), "--state-dir", str(state)], check=True, capture_output=True)

        async def status() -> str:
            async with Client(state / "staminad.sock") as c:
                return str((await c.request(ListSweeps())).sweeps[0].status)

        while anyio.run(status) != "finished":
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        cpu, rss = proc_stats(proc.pid)
        stop.set()
        attempts = args.scenarios * (args.turns + 1)
        commits = attempts * 4 + args.scenarios * 2
        print(f"{args.scenarios} scenarios x {args.turns + 1} turns at once: wall {wall:.1f} s, {attempts} attempts")
        print(
            f"  daemon CPU {cpu:.1f} s total = {cpu / args.scenarios * 1000:.0f} ms per scenario; "
            f"peak RSS {rss / 2**20:.0f} MiB = {rss / args.scenarios / 1024:.0f} KiB per scenario"
        )
        print(
            f"  events delivered to 5 subscribers: {sum(counts)} = {sum(counts) / wall:.0f}/s "
            f"(per subscriber {min(counts)}-{max(counts)})"
        )
        print(f"  store commits: ~{commits} = {commits / wall:.0f}/s")
        # resume after kill -9, mid-sweep
        sweep.write_text(sweep.read_text().replace('name = "load"', 'name = "load2"'))
        subprocess.run([*CLI, "submit", str(sweep), "--state-dir", str(state)], check=True, capture_output=True)
        time.sleep(3)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        t1 = time.perf_counter()
        proc, ready = start(state)

        async def first_event() -> float:
            async with Client(state / "staminad.sock") as c:
                await c.request(Subscribe(kinds=("attempt_started", "attempt_tested")))
                async for _ in c.events():
                    return time.perf_counter() - t1
            return float("nan")

        after = anyio.run(first_event)
        print(
            f"  resume after kill -9: socket ready in {ready * 1000:.0f} ms, first attempt event after "
            f"{after * 1000:.0f} ms"
        )
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        subprocess.run(["pkill", "-KILL", "-f", str(tmp)], check=False)


if __name__ == "__main__":
    main()
