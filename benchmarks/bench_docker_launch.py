"""What the root side's operations in a sandbox container cost: one `docker exec` each vs the container's launcher.

Issue 15 item 5: engine overhead per turn in Docker was ~53 ms, most of it the `docker exec` that
starts the harness wrapper (a turn also execs the server start, the listener checks and the stop).
The runtime now sends them to a launcher started once per container (`staminad.sandbox.inside.launcher`,
a FIFO in the root-only control directory, answers by inotify) and keeps `docker exec` as the
fallback. Both ways are timed here on one real, sealed sandbox container (`DockerSandbox.prepare`),
in the same run (each way's samples in a block, see `one_run`):

- spawn: from the request to the moment the spawned process has written its pid file into the
  control directory (seen from the host): what a harness launch or a server start costs;
- alive: a round trip that answers (is a process group alive), as the liveness checks ask;
- listeners: who holds the server port, read as the agent (a forked child there; a `python3`
  started by the exec here), asked twice per server start and once per stop.

Each of --runs runs takes --n samples per operation and way; the report is the median of the
runs' medians, the spread of the run medians, and the ratio exec / launcher.

`--smoke`: one run of 3 samples. The container is removed however the run ends.

Run: python benchmarks/bench_docker_launch.py [--n 30] [--runs 5] [--image staminabench/sandbox:latest] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiodocker
import anyio

from staminad.engine.config import RunSettings
from staminad.sandbox.base import SERVER_PORT_IN_CONTAINER
from staminad.sandbox.docker.bindsandbox import CONTROL, LAUNCHER, DockerSandbox, agent_ids
from staminad.sandbox.docker.requests import FindListeners, IsAlive, Spawn, wire
from staminad.sandbox.ports import PortAllocator

Op = Callable[[int], Awaitable[None]]


async def wait_file(path: Path, timeout: float = 10.0) -> None:
    deadline = time.perf_counter() + timeout
    while not path.exists():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{path} not written within {timeout} s")
        await anyio.sleep(0.0005)  # benchmark-side polling at 0.5 ms; the engine waits for markers with inotify


def ways(box: DockerSandbox) -> dict[str, tuple[Op, Op]]:
    """For each operation: (by docker exec, by the launcher)."""
    agent = "{}:{}".format(*agent_ids())
    listeners = FindListeners(port=SERVER_PORT_IN_CONTAINER, leader=0, as_=agent)

    async def spawn_exec(i: int) -> None:
        await box._exec(["setsid", "-f", "sh", "-c", f"echo $$ > {CONTROL}/e{i}.pid"], detach=True)
        await wait_file(box.host_control / f"e{i}.pid")

    async def spawn_launcher(i: int) -> None:
        await box._op(Spawn(argv=("sh", "-c", f"echo $$ > {CONTROL}/l{i}.pid")))
        await wait_file(box.host_control / f"l{i}.pid")

    async def alive_exec(i: int) -> None:
        await box._exec(["sh", "-c", "kill -0 -1 2>/dev/null"])

    async def alive_launcher(i: int) -> None:
        await box._op(IsAlive(pgid=1))

    async def listeners_exec(i: int) -> None:
        code, out = await box._run(
            ["python3", "-I", "-S", LAUNCHER, "once", "listeners", json.dumps(wire(listeners)[1])]
        )
        assert code == 0 and "sockets" in json.loads(out)["ok"], out

    async def listeners_launcher(i: int) -> None:
        await box._op(listeners)

    return {
        "spawn": (spawn_exec, spawn_launcher),
        "alive": (alive_exec, alive_launcher),
        "listeners": (listeners_exec, listeners_launcher),
    }


async def one_run(box: DockerSandbox, n: int, run: int) -> dict[str, tuple[float, float]]:
    """Median seconds (exec, launcher) per operation over n samples, each way's samples in one block.

    Not alternating: an exec leaves the engine's and runc's clean-up running for milliseconds after it
    returns, which a launcher request right after it would pay for (0.7 ms alone vs ~10 ms interleaved).
    """
    out = {}
    for name, (by_exec, by_launcher) in ways(box).items():
        samples: tuple[list[float], list[float]] = ([], [])
        for k, op in enumerate((by_exec, by_launcher)):
            for i in range(n):
                t0 = time.perf_counter()
                await op(run * n + i)
                samples[k].append(time.perf_counter() - t0)
        out[name] = (statistics.median(samples[0]), statistics.median(samples[1]))
    return out


async def main(args: argparse.Namespace) -> None:
    async with aiodocker.Docker() as docker:
        with tempfile.TemporaryDirectory(prefix="bench-launch-") as tmp:
            box = DockerSandbox(
                docker,
                Path(tmp) / "bench" / "c1-s0",
                "bench-launch",
                "bench",
                RunSettings(image=args.image),
                PortAllocator(),
            )
            try:
                await box.prepare()
                assert box.channel.reading(), "the launcher did not start"
                runs = [await one_run(box, args.n, r) for r in range(args.runs)]
            finally:
                await box.close()
    print(f"{args.runs} runs x {args.n} samples per operation and way; median of run medians [min-max of runs]")
    per_turn = {"exec": 0.0, "launcher": 0.0}
    counts = {"spawn": 2, "alive": 0, "listeners": 2}  # per turn: harness + server start; checks at start, stop
    for name in runs[0]:
        ex = [r[name][0] * 1000 for r in runs]
        la = [r[name][1] * 1000 for r in runs]
        print(
            f"  {name:10} docker exec {statistics.median(ex):7.2f} ms [{min(ex):.2f}-{max(ex):.2f}]   "
            f"launcher {statistics.median(la):6.2f} ms [{min(la):.2f}-{max(la):.2f}]   "
            f"ratio {statistics.median(ex) / statistics.median(la):5.1f}x"
        )
        per_turn["exec"] += counts[name] * statistics.median(ex)
        per_turn["launcher"] += counts[name] * statistics.median(la)
    print(
        f"  a turn's sandbox operations (2 spawns + 2 listener reads): {per_turn['exec']:.1f} ms by exec, "
        f"{per_turn['launcher']:.1f} ms by the launcher"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--image", default="staminabench/sandbox:latest")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: 3 samples, one run (checks it runs)")
    parsed = ap.parse_args()
    if parsed.smoke:
        parsed.n, parsed.runs = 3, 1
    anyio.run(main, parsed)
