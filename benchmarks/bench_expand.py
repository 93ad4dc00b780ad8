"""A large sweep's memory while the daemon lays it out: RSS of a real `staminad start` over the first minute.

Submits a sweep of N scenarios (default 100,000; `--smoke` runs 200 for 4 s) whose agents never answer
(`manual`), with `parallel` 4, and samples the daemon's RSS (/proc/PID/status VmRSS) every 5 s, with how far
the expansion got (`status`: expanding N of M) and the scenarios recorded; then cancels and samples again.
Lazy expansion holds `window(parallel)` = 8 scenarios in memory, so RSS stays flat whatever N is.

Run: python benchmarks/bench_expand.py [--scenarios 100000] [--seconds 60] [--smoke]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio

from protocol import Cancel, ErrorReply, GetSweep
from protocol.client import Client

CLI = [sys.executable, "-m", "staminad.cli"]
SWEEP = """
name = "expand"
[scenarios]
seeds = "0-{last}"
turns = 50
[matrix]
agents = ["manual"]
retries = [2]
[run]
runtime = "local"
parallel = 4
turn_timeout = 3600
"""


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def status(sock: Path) -> tuple[str, int, int]:
    async with Client(sock, name="bench") as client:
        info = await client.request(GetSweep(sweep="expand"))
    if isinstance(info, ErrorReply):
        raise SystemExit(f"bench_expand: the daemon refused GetSweep: {info.message}")
    return info.status, info.expanding, info.expand_total


async def cancel(sock: Path) -> None:
    async with Client(sock, name="bench", timeout=120) as client:
        await client.request(Cancel(sweep="expand"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", type=int, default=100_000)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--smoke", action="store_true", help="200 scenarios for 4 s")
    args = ap.parse_args()
    n, seconds = (200, 4.0) if args.smoke else (args.scenarios, args.seconds)
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "st"
        sweep = Path(tmp) / "expand.toml"
        sweep.write_text(SWEEP.format(last=n - 1))
        daemon = subprocess.Popen([*CLI, "start", "--state-dir", str(state)], stderr=subprocess.PIPE, text=True)
        try:
            assert daemon.stderr is not None
            for line in daemon.stderr:
                sys.stderr.write(line)
                if "serving" in line:
                    break
            else:
                raise RuntimeError(f"the daemon exited with {daemon.wait()} before serving")
            # The rest of its log goes on to ours: visible, and a full pipe never blocks the daemon.
            threading.Thread(target=shutil.copyfileobj, args=(daemon.stderr, sys.stderr), daemon=True).start()
            sock = state / "staminad.sock"
            base = rss_mib(daemon.pid)
            print(f"scenarios {n}; daemon RSS before submit {base:.1f} MiB")
            subprocess.run([*CLI, "submit", str(sweep), "--state-dir", str(state)], check=True, capture_output=True)
            start = time.monotonic()
            peak = base
            while (elapsed := time.monotonic() - start) < seconds:
                st, done, total = anyio.run(status, sock)
                rss = rss_mib(daemon.pid)
                peak = max(peak, rss)
                print(f"t={elapsed:5.1f}s  RSS {rss:7.1f} MiB  {st}  expanding {done} of {total}")
                time.sleep(min(5.0, seconds / 6))
            anyio.run(cancel, sock)
            after = rss_mib(daemon.pid)
            print(f"peak RSS {peak:.1f} MiB (+{peak - base:.1f} over idle); after cancel {after:.1f} MiB")
        finally:
            daemon.terminate()
            daemon.wait(timeout=60)


if __name__ == "__main__":
    main()
