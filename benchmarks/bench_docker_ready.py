"""How soon a sealed Docker sandbox is ready after its creation, against a bare container's create-to-first-exec.

Each of --n rounds creates, in turn:
- bare: a container of the same image on the project's network with no limits, seal or launcher:
  create, start, and one `docker exec true` to its end (what any container costs before it can be used);
- sealed: `DockerSandbox.prepare` from nothing (host directories, create, start, the firewall loaded
  by its helper, the launcher up and reading its FIFO), then, timed apart, its first `docker exec true`
  (what a fallback to exec right after setup pays; it once took ~3.9 s every time) and its removal.

Reported: the median (p50) and max of each, and the ratio sealed / bare of the medians, measured in
the same run. Goal (issue 31): ready within 1.5x of bare, no multi-second first exec.

Run: python benchmarks/bench_docker_ready.py [--n 20] [--image TAG] [--smoke]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiodocker
import anyio

from staminad.engine.config import RunSettings
from staminad.sandbox.docker.bindsandbox import DockerSandbox
from staminad.sandbox.docker.container import _KEEPALIVE, LABEL_SWEEP, NETWORK, ensure_network
from staminad.sandbox.docker.image import recipe
from staminad.sandbox.ports import PortAllocator

SWEEP = "bench-ready"


async def exec_true(container: aiodocker.containers.DockerContainer) -> None:
    ex = await container.exec(cmd=["true"], stdout=True, stderr=True)
    async with ex.start(detach=False) as stream:
        while await stream.read_out() is not None:
            pass


async def bare(docker: aiodocker.Docker, image: str, i: int) -> float:
    """Seconds from create to the end of the first exec, for a container with nothing of ours."""
    config: dict[str, Any] = {
        "Image": image,
        "Cmd": _KEEPALIVE,
        "Labels": {LABEL_SWEEP: SWEEP},
        "HostConfig": {"NetworkMode": NETWORK},
    }
    t0 = time.perf_counter()
    container = await docker.containers.create(config=config, name=f"staminabench-{SWEEP}-bare-{i}")
    try:
        await container.start()
        await exec_true(container)
        return time.perf_counter() - t0
    finally:
        await container.delete(force=True)


async def sealed(docker: aiodocker.Docker, image: str, tmp: Path, i: int) -> tuple[float, float, float]:
    """(create to ready, the first exec after it, the removal) in seconds, for one sealed sandbox."""
    box = DockerSandbox(
        docker, tmp / "sandboxes" / SWEEP / f"c1-s{i}", SWEEP, "b", RunSettings(image=image), PortAllocator()
    )
    t0 = time.perf_counter()
    try:
        await box.prepare()
        t1 = time.perf_counter()
        container = await docker.containers.get(box.name)
        await exec_true(container)
        t2 = time.perf_counter()
    finally:
        t3 = time.perf_counter()
        await box.close()
    return t1 - t0, t2 - t1, time.perf_counter() - t3


def row(name: str, values: list[float], anchor: float | None = None) -> str:
    med = statistics.median(values)
    ratio = f"  {med / anchor:4.2f}x bare" if anchor else ""
    return f"  {name:<32} p50 {med * 1000:7.1f} ms  max {max(values) * 1000:7.1f} ms{ratio}"


async def main(args: argparse.Namespace) -> None:
    image = args.image or recipe().tag()
    bares, ready, first, removal = [], [], [], []
    async with aiodocker.Docker() as docker:
        await ensure_network(docker)
        with tempfile.TemporaryDirectory(prefix="bench-ready-") as tmp:
            for i in range(args.n):  # in turn, so a busy moment of the machine falls on both alike
                bares.append(await bare(docker, image, i))
                r, f, c = await sealed(docker, image, Path(tmp), i)
                ready.append(r)
                first.append(f)
                removal.append(c)
    anchor = statistics.median(bares)
    print(f"{args.n} creations each, image {image}")
    print(row("bare: create to first exec", bares))
    print(row("sealed: create to ready", ready, anchor))
    print(row("sealed: first exec after ready", first))
    print(row("sealed: removal", removal))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--image", default=None, help="the sandbox image (default: the one `sb image build` makes)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: one creation each (checks it runs)")
    args = ap.parse_args()
    if args.smoke:
        args.n = 1
    anyio.run(main, args)
