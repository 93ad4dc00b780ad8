"""Every benchmark in benchmarks/ runs in its smoke mode (`--smoke`: tiny sizes), so none rots unseen.

Each runs as a user would run it, in a subprocess from the repository root, under a bounded timeout: it
must start, finish with status 0 and print its figures. No time is ever asserted: the figures only have
to be there. The Docker benchmarks must also leave no container or network of theirs behind.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
TIMEOUT = 240  # seconds per benchmark: its smoke run takes well under a minute on an idle machine
NUM = r"[\d.]+"

# benchmark -> (the markers it needs besides `slow`, the figures its output must hold)
LOCAL: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "bench_cli.py": ((), (rf"staminad --version\s+CPU\s+{NUM} ms\s+wall\s+{NUM} ms\s+{NUM}x bare CPU",)),
    "bench_generate.py": ((), (rf"20 turns\s+weighted\s+wall {NUM} s \[{NUM}-{NUM}\]\s+CPU {NUM} s",)),
    "bench_suite.py": (
        (),
        (rf"stdlib-http11\s+0\s+20\s+\d+ \|.*\|\s+{NUM} \|\s+{NUM}x\s+{NUM}x\s+{NUM}x\s+{NUM}x\s+{NUM}x",),
    ),
    "bench_sweep.py": (("sweep",), (rf"engine overhead\s+median\s+{NUM} ms\s+p99\s+{NUM} ms",)),
    "bench_engine_turns.py": (("sweep",), (rf"turns\s+3-\s+4: engine overhead median\s+{NUM} ms",)),
    "bench_daemon.py": (
        ("sweep",),
        (rf"daemon CPU {NUM} s total", rf"resume after kill -9: socket ready in {NUM} ms", r"stopped 2 daemons"),
    ),
    "bench_expand.py": (("sweep",), (rf"peak RSS {NUM} MiB \(\+-?{NUM} over idle\); after cancel {NUM} MiB",)),
    "bench_concurrency.py": (
        ("sweep",),
        (
            rf"\s1\s+3\s+threads\s+{NUM}\s+1\.00\s+{NUM}",
            rf"\s1\s+3\s+workers\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}ms\s+{NUM}ms",
            rf"throughput vs cores: 3 scenarios, workers: 1 cores {NUM}/s",
            r"model: threads are held to one GIL",
        ),
    ),
    "bench_tui.py": (("sweep",), (rf"median of 1 runs .* p50 {NUM} ms, p99 {NUM} ms,? .*TUI CPU {NUM}% of a core",)),
}
DOCKER: dict[str, tuple[str, ...]] = {
    "bench_docker_launch.py": (rf"spawn\s+docker exec\s+{NUM} ms .* launcher\s+{NUM} ms .* ratio\s+{NUM}x",),
    "bench_seal.py": (rf"seal alone\s+median\s+{NUM} ms", rf"own network: .* median\s+{NUM} ms"),
    "bench_docker_ready.py": (
        rf"bare: create to first exec\s+p50\s+{NUM} ms",
        rf"sealed: create to ready\s+p50\s+{NUM} ms\s+max\s+{NUM} ms\s+{NUM}x bare",
    ),
    "bench_docker_phases.py": tuple(
        rf"{phase}\s+local\s+{NUM} ms .* docker\s+{NUM} ms .*{NUM}x" for phase in ("suite", "teardown", "overhead")
    ),
}
# the sweep label each Docker benchmark's containers carry (what must be gone after it)
DOCKER_SWEEPS = {
    "bench_docker_launch.py": "bench-launch",
    "bench_seal.py": "bench-seal",
    "bench_docker_ready.py": "bench-ready",
    "bench_docker_phases.py": "phases",
}


def _smoke(name: str, *extra: str) -> str:
    """Run benchmarks/`name` with --smoke; fail with its output unless it exits 0; return its stdout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / name), "--smoke", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _figures(name: str, out: str, patterns: tuple[str, ...]) -> None:
    for pattern in patterns:
        assert re.search(pattern, out), f"{name} did not print /{pattern}/:\n{out[-3000:]}"


def test_every_benchmark_has_a_smoke_run() -> None:
    """Each benchmarks/bench_*.py takes --smoke and is run by this module."""
    found = {p.name for p in BENCHMARKS.glob("bench_*.py")}
    assert found == set(LOCAL) | set(DOCKER)
    for name in found:
        assert '"--smoke"' in (BENCHMARKS / name).read_text(), f"{name} has no --smoke flag"


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [pytest.param(name, marks=[getattr(pytest.mark, m) for m in marks]) for name, (marks, _) in LOCAL.items()],
)
def test_benchmark_smoke_run(name: str) -> None:
    """The benchmark's smoke run starts, finishes with status 0 and prints its figures."""
    _figures(name, _smoke(name), LOCAL[name][1])


def _docker_lines(*argv: str) -> set[str]:
    out = subprocess.run(["docker", *argv], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(DOCKER))
def test_docker_benchmark_smoke_run(name: str, sandbox_image: str) -> None:
    """The Docker benchmark's smoke run prints its figures and removes every container and network it made."""
    sweep = DOCKER_SWEEPS[name]
    containers = ("ps", "-aq", "--filter", f"label=staminabench.sweep={sweep}")
    networks = ("network", "ls", "-q", "--filter", "name=staminabench-bench-")
    before = _docker_lines(*containers), _docker_lines(*networks)
    out = _smoke(name, "--image", sandbox_image)
    _figures(name, out, DOCKER[name])
    assert _docker_lines(*containers) <= before[0], f"{name} left containers behind"
    assert _docker_lines(*networks) <= before[1], f"{name} left networks behind"
