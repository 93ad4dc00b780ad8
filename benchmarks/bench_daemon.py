"""The daemon under load: N concurrent scenarios of a fast deterministic agent (the reference agent).

Reports daemon CPU seconds and peak RSS per scenario, events per second delivered to 5 subscribers,
store commits per second (4 per attempt: begin, harness done, tested, scenario progress; plus 2 per
scenario), and the time to resume after kill -9 (socket ready, then first attempt event).

It stops only what it started: each daemon by its process group, and what a daemon's scenarios left
running in sessions of their own (harness wrappers, servers) by the tag the local runtime puts in their
environment, whose value names a sandbox under this run's state directory. `--smoke`: 3 scenarios x 1 turn.

Run: python benchmarks/bench_daemon.py [--scenarios 100] [--turns 2] [--smoke]
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

from protocol import ErrorReply, ListSweeps, Subscribe
from protocol.client import Client

CLI = [sys.executable, "-m", "staminad.cli"]
TAGS = (b"STAMINABENCH_AGENT_OF=", b"STAMINABENCH_SERVER_OF=")  # staminad.sandbox.local's AGENT_TAG, SERVER_TAG


def ours(state: Path) -> list[int]:
    """Pids of the processes whose environment tags them as a sandbox's under `state` (ours, not others')."""
    prefixes = [tag + str(state).encode() + b"/" for tag in TAGS]
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue  # gone, or not ours to read
        if any(entry.startswith(prefix) for entry in env for prefix in prefixes):
            found.append(int(proc.name))
    return found


def stop_all(daemons: list[subprocess.Popen[bytes]], state: Path) -> tuple[int, int]:
    """SIGKILL what is left of the daemons' process groups and of their sandboxes; returns how many groups
    and tagged processes it found."""
    groups = left = 0
    for proc in daemons:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the group outlives its leader while a member lives
            groups += 1
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
    for _ in range(10):  # a victim's child may be mid-exec, its environment not yet readable: look again
        pids = ours(state)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        left += len(pids)
    return groups, left


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
        start_new_session=True,  # its own process group, which `stop_all` ends
    )
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the daemon exited with {proc.returncode} before its socket answered")
        if time.monotonic() > deadline:
            raise RuntimeError("the daemon's socket did not answer within 120 s")
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
    ap.add_argument("--smoke", action="store_true", help="3 scenarios x 1 turn")
    args = ap.parse_args()
    if args.smoke:
        args.scenarios, args.turns = 3, 1
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        state = tmp / "state"
        sweep = tmp / "load.toml"
        sweep.write_text(
            f'name = "load"\n[scenarios]\nseeds = "0-{args.scenarios - 1}"\nturns = {args.turns}\n'
            f'[matrix]\nagents = ["reference"]\nretries = [0]\n[run]\nruntime = "local"\n'
            f"parallel = {args.scenarios}\nturn_timeout = 300\nserver_start_timeout = 120\n"
        )
        daemons: list[subprocess.Popen[bytes]] = []
        try:
            proc, _ = start(state)
            daemons.append(proc)
            counts = [0] * 5
            stop = threading.Event()
            threads = [
                threading.Thread(target=subscriber, args=(state, counts, i, stop), daemon=True) for i in range(5)
            ]
            for t in threads:
                t.start()
            time.sleep(0.5)
            t0 = time.perf_counter()
            subprocess.run([*CLI, "submit", str(sweep), "--state-dir", str(state)], check=True, capture_output=True)

            async def status() -> str:
                async with Client(state / "staminad.sock") as c:
                    listed = await c.request(ListSweeps())
                if isinstance(listed, ErrorReply):
                    raise SystemExit(f"bench_daemon: the daemon refused ListSweeps: {listed.message}")
                return str(listed.sweeps[0].status)

            while anyio.run(status) != "finished":
                time.sleep(0.2)
            wall = time.perf_counter() - t0
            cpu, rss = proc_stats(proc.pid)
            stop.set()
            attempts = args.scenarios * (args.turns + 1)
            commits = attempts * 4 + args.scenarios * 2
            print(
                f"{args.scenarios} scenarios x {args.turns + 1} turns at once: wall {wall:.1f} s, {attempts} attempts"
            )
            print(
                f"  daemon CPU {cpu:.1f} s total = {cpu / args.scenarios * 1000:.0f} ms per scenario; "
                f"peak RSS {rss / 2**20:.0f} MiB = {rss / args.scenarios / 1024:.0f} KiB per scenario"
            )
            print(
                f"  events delivered to 5 subscribers: {sum(counts)} = {sum(counts) / wall:.0f}/s "
                f"(per subscriber {min(counts)}-{max(counts)})"
            )
            print(f"  store commits: ~{commits} = {commits / wall:.0f}/s")
            # resume after kill -9, mid-sweep: once the second sweep's first attempt has started

            async def first_attempt(submit: list[str]) -> None:
                async with Client(state / "staminad.sock") as c:
                    await c.request(Subscribe(kinds=("attempt_started",)))
                    await anyio.to_thread.run_sync(lambda: subprocess.run(submit, check=True, capture_output=True))
                    with anyio.fail_after(120):
                        async for event in c.events():
                            if event.sweep == "load2":
                                return

            sweep.write_text(sweep.read_text().replace('name = "load"', 'name = "load2"'))
            anyio.run(first_attempt, [*CLI, "submit", str(sweep), "--state-dir", str(state)])
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            t1 = time.perf_counter()
            proc, ready = start(state)
            daemons.append(proc)

            async def first_event() -> float:
                async with Client(state / "staminad.sock") as c:
                    await c.request(Subscribe(kinds=("attempt_started", "attempt_tested")))
                    with anyio.fail_after(120):
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
        finally:
            groups, left = stop_all(daemons, state)
        print(f"  stopped {len(daemons)} daemons; then killed {groups} process groups and {left} tagged processes left")


if __name__ == "__main__":
    main()
