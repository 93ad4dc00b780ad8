"""The daemon at 50/200/500 concurrent scenarios of the reference agent (local runtime): 1 and 2 cores, threads
vs worker processes.

For each core count (the daemon is started under `taskset`, so it, its worker processes and every agent
and server it starts share those CPUs), each size and each mode (`--workers 0`: suites in threads of the
daemon, the anchor; `--workers` default: the worker-process pool), a daemon is started on a fresh state
directory, a sweep of N scenarios x `--turns` turns at parallel N is submitted, and after a warm-up a
window of `--window` seconds is measured in steady state:

- throughput: attempts tested per second in the window;
- daemon CPU per scenario-turn: the daemon's process (its event loop, and its threads) and, apart, its
  worker processes, over the attempts tested in the window;
- `status` round trip: a client on its own connection sends `ListSweeps` every 100 ms; p50 and p99;
- marker latency p50 and p99: the marker's seen time less its end time, over the window's attempts.

Each row is also given as a ratio against the in-thread anchor of the same size and cores in this run, and
throughput against cores as a ratio to the fewest cores run (the figure for scaling).

The model for N cores: an attempt costs L CPU seconds in the daemon's loop process (one core at most, the GIL),
W in its worker processes (N - 1 of them) and A in the agent's and server's own processes (not measured here), so
X(N) <= min(1/L, (N - 1)/W, N/(L + W + A)) attempts/s; with the daemon's raised priority (`--raise-priority`,
its default where the OS allows: the daemon is started in a session of its own, as a service manager does) or
`--child-nice`, agents and servers run below it, so L is served first and the loop's latency does not grow with N.
Every daemon is stopped by cancelling its sweep (which ends its sandboxes) and then SIGTERM to its own
process; nothing else is touched.

The loop probe's lags are always recorded; its stack sampler (what held the loop) only with `--stacks N`:
it takes the daemon's GIL 200 times a second, so compare runs made with the same setting.

Measured for issue 41, `--modes workers --window 40 --warmup 30`, one run of each row, on this 2-core box quiet
(nothing else running): throughput grows with cores at every size. 50 scenarios: 1 core 1.07 attempts/s, 2 cores
2.30 (x2.14); 200: 1.45 and 2.57 (x1.77); 500: 1.07 and 1.62 (x1.51). At 500 on 2 cores the daemon's process takes
104 ms and its workers 189 ms of CPU per attempt (128 and 134 on 1 core), `status` p99 is 95.8 ms (44.1 on 1 core)
and the loop's lag p99 19.4 ms. A `perf record -a` of that 500-scenario window found both cores busy all the time:
half the samples in the agents' and servers' `python3`, a quarter in the daemon and its workers, and a fifth in
`bash` and the tools of pyenv's `python3` shim (this box's `python3` is a pyenv shim: every agent and server start
forks ~20 processes before Python runs), which a sandbox image does not have. The x0.29-0.52 measured before on this
box came with a full test run beside the benchmark; the fixes of that session (sandbox `/proc` scans on a control
worker of their own, suites being made held to half the pool's slots, suite workers pinned to a CPU each) are in
these figures. The second run, the same command on the same box quiet again a session later (its host less
loaded: every row faster): 50 scenarios 1.67 and 3.50 attempts/s (x2.09), 200: 1.97 and 3.72 (x1.89), 500: 2.00
and 4.27 (x2.14); `status` p99 at 500 on 2 cores 17.1 ms (19.4 on 1 core). What still grows with N per
attempt: the local runtime's `/proc` scans (every process's environment read to find a sandbox's tagged processes,
three scans per attempt), ~33 ms of worker CPU more per attempt at 500 than at 200.

Run: python benchmarks/bench_concurrency.py [--sizes 50,200,500] [--cores 1,2] [--turns 20] [--window 30]
     python benchmarks/bench_concurrency.py --smoke   (tiny sizes: it starts, finishes and prints its figures)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from protocol import Cancel, ListSweeps
from protocol.client import Client
from staminad.daemon.loopprobe import ENV as PROBE_ENV
from staminad.daemon.loopprobe import STACKS_ENV, TICK

CLI = [sys.executable, "-m", "staminad.cli"]
TICKS = os.sysconf("SC_CLK_TCK")
FINAL = ("finished", "cancelled", "failed")


@dataclass
class Row:
    cores: int
    size: int
    mode: str
    attempts: int
    seconds: float
    loop_cpu: float  # seconds of the daemon's own process in the window
    worker_cpu: float  # seconds of its worker processes in the window
    status: list[float]
    markers: list[float]
    lags: list[float] = field(default_factory=list)  # the loop probe's wake-up overshoots in the window
    cpu: list[float] = field(default_factory=list)  # the loop thread's CPU over each of those ticks
    busy: Counter[str] = field(default_factory=Counter)  # what held the loop: sampled stacks, counted
    samples: int = 0

    @property
    def rate(self) -> float:
        return self.attempts / self.seconds

    def per_turn(self, cpu: float) -> float:
        return cpu / max(1, self.attempts) * 1000


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) of one live process; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def workers_of(pid: int) -> list[int]:
    """The daemon's worker processes (its children running `staminad.suite.worker`)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                cmd = Path(f"/proc/{child}/cmdline").read_bytes()
                if b"staminad.suite.worker" in cmd:
                    found.append(int(child))
    return found


class Prober:
    """Times `ListSweeps` round trips on one connection, every `interval` seconds, in a thread of its own."""

    def __init__(self, sock: Path, interval: float = 0.1) -> None:
        self.sock, self.interval = sock, interval
        self.samples: list[tuple[float, float]] = []  # (when, seconds)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def run() -> None:
            async with Client(self.sock) as client:
                while not self.stop.is_set():
                    t0 = time.perf_counter()
                    await client.request(ListSweeps())
                    self.samples.append((time.time(), time.perf_counter() - t0))
                    await anyio.sleep(self.interval)  # pacing of the probe, not synchronisation

        with contextlib.suppress(Exception):  # the connection ends when the daemon stops
            anyio.run(run)

    def between(self, t0: float, t1: float) -> list[float]:
        return [s for when, s in self.samples if t0 <= when <= t1]


async def _ask(sock: Path, message: object) -> object:
    async with Client(sock) as client:
        return await client.request(message)  # type: ignore[arg-type]


def _sweep_status(sock: Path) -> str:
    reply = anyio.run(_ask, sock, ListSweeps())
    sweeps = reply.sweeps  # type: ignore[attr-defined]
    return str(sweeps[0].status) if sweeps else ""


def _tested(db: Path) -> list[tuple[float, float | None]]:
    """(finished_at, marker_latency) of every tested attempt so far."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as conn:
        return conn.execute(
            "SELECT finished_at, marker_latency FROM attempts WHERE outcome IN ('pass', 'fail') "
            "AND finished_at IS NOT NULL"
        ).fetchall()


def _probed(path: Path, t0: float, t1: float) -> tuple[list[float], list[float], Counter[str], int]:
    """The loop probe's lags, CPU per tick, held-loop stacks and sample count over the seconds written in [t0, t1]."""
    lags: list[float] = []
    cpu: list[float] = []
    busy: Counter[str] = Counter()
    samples = 0
    with contextlib.suppress(OSError):
        for text in path.read_text().splitlines():
            line = json.loads(text)
            if t0 <= line["t"] <= t1:
                lags += line["lags"]
                cpu += line["cpu"]
                busy.update(line["busy"])
                samples += line["samples"]
    return lags, cpu, busy, samples


def _wait_socket(sock: Path, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the daemon exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as s:
            s.connect(str(sock))
            return
        time.sleep(0.05)  # polling a socket that is not up yet
    raise TimeoutError("the daemon did not serve its socket")


def measure(
    cores: list[int], size: int, mode: str, turns: int, window: float, warmup: float, stacks: bool, daemon: list[str]
) -> Row:
    with tempfile.TemporaryDirectory(prefix="bench-conc-") as tmp_s:
        tmp = Path(tmp_s)
        state, sock = tmp / "state", tmp / "state" / "staminad.sock"
        sweep = tmp / "load.toml"
        sweep.write_text(
            f'name = "load"\n[scenarios]\nseeds = "0-{size - 1}"\nturns = {turns}\n'
            f'[matrix]\nagents = ["reference"]\nretries = [0]\n[run]\nruntime = "local"\n'
            f"parallel = {size}\nturn_timeout = 600\nserver_start_timeout = 120\n"
        )
        argv = [*CLI, "start", "--state-dir", str(state), "--runtime", "local", "--parallel", str(size)]
        argv += [*(["--workers", "0"] if mode == "threads" else []), *daemon]
        cpus = ",".join(map(str, cores))
        probe = tmp / "probe.jsonl"
        env = {**os.environ, PROBE_ENV: str(probe), **({STACKS_ENV: "1"} if stacks else {})}
        proc = subprocess.Popen(  # its own session, as a service manager starts it (see `suite.niceness`)
            ["taskset", "-c", cpus, *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        try:
            _wait_socket(sock, proc)
            prober = Prober(sock)
            prober.thread.start()
            subprocess.run([*CLI, "submit", str(sweep), "--state-dir", str(state)], check=True, capture_output=True)
            db = state / "staminad.db"
            deadline = time.monotonic() + 600
            while not _tested(db):  # warm-up runs from the first tested attempt: every sandbox is up by then
                if time.monotonic() > deadline:
                    raise TimeoutError("no attempt was tested within 600 s")
                time.sleep(0.5)
            time.sleep(warmup)
            pool = workers_of(proc.pid)
            t0, c0, w0 = time.time(), cpu_of(proc.pid), sum(map(cpu_of, pool))
            time.sleep(window)
            while not any(t0 <= when for when, _ in _tested(db)) and time.time() - t0 < 10 * window:
                time.sleep(0.5)  # a loaded box: the window goes on until one attempt is in it (a smoke run's 2 s)
            t1, c1, w1 = time.time(), cpu_of(proc.pid), sum(map(cpu_of, pool))
            done = [(when, lat) for when, lat in _tested(db) if t0 <= when <= t1]
            prober.stop.set()
            lags, loop_cpu, busy, samples = _probed(probe, t0, t1)
            return Row(
                lags=lags,
                cpu=loop_cpu,
                busy=busy,
                samples=samples,
                cores=len(cores),
                size=size,
                mode=mode,
                attempts=len(done),
                seconds=t1 - t0,
                loop_cpu=c1 - c0,
                worker_cpu=w1 - w0,
                status=prober.between(t0, t1),
                markers=[lat for _, lat in done if lat is not None],
            )
        finally:
            _stop(proc, sock)


def _stop(proc: subprocess.Popen[bytes], sock: Path) -> None:
    """Cancel the sweep (its sandboxes end with it), then stop our daemon: SIGTERM, SIGKILL if it hangs."""
    with contextlib.suppress(Exception):
        anyio.run(_ask, sock, Cancel(sweep="load"))
        deadline = time.monotonic() + 120
        while _sweep_status(sock) not in FINAL and time.monotonic() < deadline:
            time.sleep(0.2)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def report(rows: list[Row]) -> None:
    anchors = {(r.cores, r.size): r for r in rows if r.mode == "threads"}
    print(
        f"{'cores':>5} {'N':>4} {'mode':>8} {'att/s':>6} {'x anc':>6} {'loop ms/turn':>12} {'workers ms/turn':>15} "
        f"{'status p50':>10} {'status p99':>10} {'x anc':>6} {'marker p50':>10} {'marker p99':>10} {'x anc':>6} "
        f"{'lag p50':>8} {'lag p99':>8} {'lag max':>8} {'held':>5}"
    )
    for r in rows:
        a = anchors.get((r.cores, r.size))
        sp99, mp99 = pct(r.status, 99) * 1000, pct(r.markers, 99) * 1000
        ratio = (
            (r.rate / a.rate, sp99 / (pct(a.status, 99) * 1000), mp99 / (pct(a.markers, 99) * 1000))
            if a is not None and a.rate and a.status and a.markers
            else (float("nan"),) * 3
        )
        print(
            f"{r.cores:>5} {r.size:>4} {r.mode:>8} {r.rate:>6.2f} {ratio[0]:>6.2f} {r.per_turn(r.loop_cpu):>12.0f} "
            f"{r.per_turn(r.worker_cpu):>15.0f} {pct(r.status, 50) * 1000:>8.1f}ms {sp99:>8.1f}ms {ratio[1]:>6.2f} "
            f"{pct(r.markers, 50) * 1000:>8.1f}ms {mp99:>8.1f}ms {ratio[2]:>6.2f} "
            f"{pct(r.lags, 50) * 1000:>6.1f}ms {pct(r.lags, 99) * 1000:>6.1f}ms "
            f"{max(r.lags, default=float('nan')) * 1000:>6.0f}ms {sum(r.busy.values()) / max(1, r.samples):>5.0%}"
        )
    print(
        f"  ({sum(r.attempts for r in rows)} attempts measured; status samples per row "
        f"{min(len(r.status) for r in rows)}-{max(len(r.status) for r in rows)})"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="50,200,500")
    ap.add_argument("--cores", default="1,2", help="core counts to run on (CPUs 0..n-1 of this process's affinity)")
    ap.add_argument("--modes", default="threads,workers")
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--window", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument(
        "--stacks",
        type=int,
        default=0,
        help="sample the loop's stacks and print the N that most often held it (the sampler perturbs the timings)",
    )
    ap.add_argument("--child-nice", help="the daemon's --child-nice (default: its own default)")
    ap.add_argument("--raise-priority", help="the daemon's --raise-priority (default: its own default)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: 3 scenarios, 1 core, a 2 s window")
    args = ap.parse_args()
    if args.smoke:
        args.sizes, args.cores, args.turns, args.window, args.warmup = "3", "1", 3, 2.0, 0.5
    usable = sorted(os.sched_getaffinity(0))
    rows = []
    for n in map(int, args.cores.split(",")):
        if n > len(usable):
            print(f"skipping {n} cores: this process may use {len(usable)}")
            continue
        for size in map(int, args.sizes.split(",")):
            for mode in args.modes.split(","):
                daemon = ["--child-nice", args.child_nice] if args.child_nice else []
                daemon += ["--raise-priority", args.raise_priority] if args.raise_priority else []
                row = measure(usable[:n], size, mode, args.turns, args.window, args.warmup, args.stacks > 0, daemon)
                print(
                    f"  {n} cores, {size} scenarios, {mode}: {row.attempts} attempts in {row.seconds:.1f} s",
                    flush=True,
                )
                rows.append(row)
                if len(rows) > 1 and not args.smoke:
                    report(rows)  # so far: a long run interrupted still leaves its figures
    report(rows)
    scaling(rows)
    model(rows)
    lagged(rows)
    if args.stacks:
        held(rows, args.stacks)


def scaling(rows: list[Row]) -> None:
    """Throughput against cores, per size and mode: attempts/s on each core count, as a ratio to the fewest."""
    rates: dict[tuple[int, str], dict[int, float]] = {}
    for r in rows:
        rates.setdefault((r.size, r.mode), {})[r.cores] = r.rate
    for (size, mode), by in sorted(rates.items()):
        low = by[min(by)]
        shown = [
            f"{n} cores {x:.2f}/s (x{x / low:.2f})" if low else f"{n} cores {x:.2f}/s" for n, x in sorted(by.items())
        ]
        print(f"throughput vs cores: {size} scenarios, {mode}: " + ", ".join(shown))


def lagged(rows: list[Row]) -> None:
    """Of the loop's late wake-ups (over 50 ms), how much the loop thread ran (CPU) and how much it only waited
    (for the GIL, or for a core: on a loaded machine the process is not scheduled)."""
    for r in rows:
        late = [(lag, cpu) for lag, cpu in zip(r.lags, r.cpu, strict=False) if lag > 0.05]
        if late:
            lag, cpu = sum(x for x, _ in late), sum(min(c, x + TICK) for x, c in late)
            print(
                f"late wake-ups: {r.cores} cores, {r.size} scenarios, {r.mode}: {len(late)} over 50 ms, "
                f"{lag:.1f} s late in all, the loop thread on CPU {cpu / (lag + TICK * len(late)):.0%} of those ticks"
            )


def held(rows: list[Row], top: int) -> None:
    """Per row, the stacks most often found holding the loop (innermost frame first), as shares of the samples."""
    for r in rows:
        print(f"what held the loop: {r.cores} cores, {r.size} scenarios, {r.mode} ({r.samples} samples)")
        for stack, n in r.busy.most_common(top):
            print(f"  {n / max(1, r.samples):6.1%}  {stack}")


def _inv(seconds: float) -> float:
    """Attempts per second from seconds per attempt (infinite for none measured: a smoke run's coarse clock)."""
    return 1 / seconds if seconds else float("inf")


def model(rows: list[Row]) -> None:
    """The ceiling on N cores from the measured CPU per attempt: L in the loop process (one core at most), W in
    the workers (N - 1 of them); the agents' and servers' own CPU comes on top, so these are upper bounds."""
    pooled = [r for r in rows if r.mode == "workers" and r.attempts]
    if not pooled:
        return
    loop = statistics.median(r.per_turn(r.loop_cpu) for r in pooled) / 1000
    work = statistics.median(r.per_turn(r.worker_cpu) for r in pooled) / 1000
    threads = [r for r in rows if r.mode == "threads" and r.attempts]
    one = statistics.median(r.per_turn(r.loop_cpu) for r in threads) / 1000 if threads else float("nan")
    bounds = ", ".join(
        f"N={n}: {min(1 / loop, (n - 1) / work if n > 1 else 1 / (loop + work)):.0f}" for n in (2, 4, 8, 16)
    )
    print(
        f"model: threads are held to one GIL, X <= 1/{one * 1000:.0f} ms = {_inv(one):.1f} attempts/s whatever N; "
        f"workers: X(N) <= min(1/L, (N-1)/W) with L = {loop * 1000:.0f} ms, W = {work * 1000:.0f} ms per attempt "
        f"(medians here): {bounds} attempts/s, less what the agents' own processes take of the N cores"
    )


if __name__ == "__main__":
    main()
