"""What one launch into a sandbox container costs: a `docker exec` per launch vs a long-lived in-container launcher.

Issue 15 item 5: engine overhead per turn in Docker is ~53 ms, most of it the `docker exec` that
starts the harness wrapper (and a turn also execs the server start and its stop). The design
measured here replaces those execs with a launcher started once per container: a `sh` loop that
reads one line per request from a FIFO in the control directory (bind-mounted at /stamina) and
starts the named job detached. The engine writes the line; opening the FIFO without a reader
fails at once (ENXIO), which tells the engine the launcher is gone (an agent's broad `pkill`
could kill it) and that it must fall back to `docker exec` and restart it. No polling anywhere.

Both paths are timed the same way: from the request to the moment the launched process has
written its pid file into the control directory (seen from the host), median and p90 of --n.

Run: python benchmarks/bench_docker_launch.py [--n 50] [--image staminabench/sandbox:latest]
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import os
import statistics
import tempfile
import time
from pathlib import Path

import aiodocker

LAUNCHER = ("mkfifo /stamina/launch.fifo 2>/dev/null; exec 3<>/stamina/launch.fifo; "
            "while read -r job <&3; do setsid -f sh -c 'echo $$ > /stamina/$1.pid' sh \"$job\"; done")


async def wait_file(path: Path, timeout: float = 10.0) -> None:
    deadline = time.perf_counter() + timeout
    while not path.exists():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{path} not written within {timeout} s")
        await asyncio.sleep(0.0005)  # benchmark-side polling at 0.5 ms; the engine's MarkerWatcher uses inotify


def fifo_send(fifo: Path, line: str) -> None:
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise RuntimeError("no launcher reads the FIFO: fall back to docker exec") from None
        raise
    try:
        os.write(fd, line.encode() + b"\n")
    finally:
        os.close(fd)


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--image", default="staminabench/sandbox:latest")
    args = ap.parse_args()
    docker = aiodocker.Docker()
    with tempfile.TemporaryDirectory(prefix="bench-launch-") as tmp:
        control = Path(tmp)
        os.chmod(control, 0o777)
        container = await docker.containers.create(config={
            "Image": args.image, "Cmd": ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"],
            "User": f"{os.getuid()}:{os.getgid()}", "Labels": {"staminabench.bench": "docker-launch"},
            "HostConfig": {"Binds": [f"{control}:/stamina"], "NetworkMode": "none", "Init": True}},
            name=f"staminabench-bench-launch-{os.getpid()}")
        try:
            await container.start()
            execs, fifo = [], []
            for i in range(args.n):
                t0 = time.perf_counter()
                ex = await container.exec(cmd=["setsid", "-f", "sh", "-c", f"echo $$ > /stamina/e{i}.pid"],
                                          user=f"{os.getuid()}:{os.getgid()}", stdout=True, stderr=True)
                await ex.start(detach=True)
                await wait_file(control / f"e{i}.pid")
                execs.append(time.perf_counter() - t0)
            ex = await container.exec(cmd=["sh", "-c", LAUNCHER], user=f"{os.getuid()}:{os.getgid()}")
            await ex.start(detach=True)
            await wait_file(control / "launch.fifo")
            for i in range(args.n):
                t0 = time.perf_counter()
                for _ in range(200):  # the launcher may still be opening its end on the first request
                    try:
                        fifo_send(control / "launch.fifo", f"f{i}")
                        break
                    except RuntimeError:
                        await asyncio.sleep(0.005)
                await wait_file(control / f"f{i}.pid")
                fifo.append(time.perf_counter() - t0)
        finally:
            await container.delete(force=True)
            await docker.close()
    for name, vals in (("docker exec per launch", execs), ("in-container launcher (FIFO)", fifo)):
        print(f"{name:30} median {statistics.median(vals) * 1000:7.2f} ms   p90 {pct(vals, 90) * 1000:7.2f} ms "
              f"(n={len(vals)})")
    print(f"per turn (launch + server start + server stop = 3 execs): "
          f"{3 * statistics.median(execs) * 1000:.1f} ms by exec, {3 * statistics.median(fifo) * 1000:.1f} ms by FIFO")


if __name__ == "__main__":
    asyncio.run(main())
