"""What sealing a Docker sandbox costs, against the alternative of one network per scenario.

Per container: create + start (unsealed), the firewall helper (`_seal`), and, for comparison, creating,
connecting and removing a bridge network of its own (what one-network-per-scenario would add to each
scenario, besides drawing from Docker's ~30 default address pools).

`--smoke`: one container.

Run: python benchmarks/bench_seal.py [--image staminabench/sandbox:TAG] [--n 5] [--smoke]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import aiodocker
import anyio

from staminad.engine.config import RunSettings
from staminad.sandbox.base import Grant
from staminad.sandbox.docker.bindsandbox import LABEL_SWEEP, DockerSandbox, ensure_network
from staminad.sandbox.docker.image import recipe
from staminad.sandbox.ports import PortAllocator


async def main(image: str, n: int) -> None:
    seal, prepare, network = [], [], []
    async with aiodocker.Docker() as docker:
        await ensure_network(docker)  # the sealed network every sweep shares: it stays
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(n):
                box = DockerSandbox(
                    docker,
                    Path(tmp) / "sandboxes" / "bench" / f"c1-s{i}",
                    "bench-seal",
                    "b",
                    RunSettings(image=image),
                    PortAllocator(),
                    grant=Grant(),
                )
                try:  # the container and the network are removed however the run ends
                    t0 = time.perf_counter()
                    await box.prepare()
                    t1 = time.perf_counter()
                    await box._seal(await docker.containers.get(box.name))
                    t2 = time.perf_counter()
                    prepare.append(t1 - t0)
                    seal.append(t2 - t1)
                    t3 = time.perf_counter()
                    net = await docker.networks.create(
                        {"Name": f"staminabench-bench-{i}", "Driver": "bridge", "Labels": {LABEL_SWEEP: "bench-seal"}}
                    )
                    try:
                        await net.connect({"Container": box.name})
                        await net.disconnect({"Container": box.name})
                    finally:
                        await net.delete()
                    network.append(time.perf_counter() - t3)
                finally:
                    with anyio.CancelScope(shield=True):
                        await box.close()
    for name, values in (
        ("prepare (create, start, seal)", prepare),
        ("seal alone", seal),
        ("own network: create, connect, disconnect, remove", network),
    ):
        print(f"{name:<52} median {statistics.median(values) * 1000:7.1f} ms  max {max(values) * 1000:7.1f} ms")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", default=recipe().tag())
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: one container (checks it runs)")
    args = ap.parse_args()
    if args.smoke:
        args.n = 1
    anyio.run(main, args.image, args.n)
