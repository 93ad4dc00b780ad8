"""Agents, servers and suite workers run below the daemon's CPU priority (`suite.niceness`), or at it with 0."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

from staminad.engine.markers import MarkerWatcher
from staminad.sandbox.base import marker_path
from staminad.sandbox.local import LocalSandbox
from staminad.sandbox.ports import PortAllocator
from staminad.suite import niceness
from staminad.suite.pool import WorkerPool

pytestmark = pytest.mark.anyio

GROUPS = Path("/proc/self/autogroup").exists()  # a kernel with session autogroups
REPORT = 'echo "$(nice) $(cut -d" " -f3 /proc/self/autogroup 2>/dev/null)" > "$0"'


def expected(n: int) -> int:
    """The nice value a child started `n` levels below this process gets (the kernel caps it at 19)."""
    return min(19, os.getpriority(os.PRIO_PROCESS, 0) + n)


@pytest.fixture(params=[10, 0])
def nice(request: pytest.FixtureRequest) -> Iterator[int]:
    """The children's niceness set for one test, the default put back after it."""
    niceness.set_child_nice(request.param)
    yield request.param
    niceness.set_child_nice(niceness.DEFAULT)


@pytest.fixture
async def watcher() -> AsyncIterator[MarkerWatcher]:
    """A marker watcher serving in the background (inotify)."""
    w = MarkerWatcher()
    async with anyio.create_task_group() as tg:
        tg.start_soon(w.serve)
        yield w
        tg.cancel_scope.cancel()
    w.close()


def reported(path: Path) -> tuple[int, int | None]:
    """(nice value, autogroup nice value or None) as REPORT wrote them."""
    value, _, group = path.read_text().strip().partition(" ")
    return int(value), int(group) if group else None


def test_a_new_session_gets_the_niceness_and_an_autogroup_at_it(tmp_path: Path, nice: int) -> None:
    """After setsid the process and its session's autogroup (where the kernel has them) run `nice` levels down."""
    out = tmp_path / "report"
    argv = niceness.lowered(["setsid", "-w", *niceness.in_new_session(["sh", "-c", REPORT, str(out)])])
    subprocess.run(argv, check=True, timeout=30)
    value, group = reported(out)
    assert value == expected(nice)
    if GROUPS:
        assert group == nice  # 0: a new session's group starts at the kernel's default, 0
    if nice == 0:
        assert argv == ["setsid", "-w", "sh", "-c", REPORT, str(out)]


def test_a_niceness_outside_0_to_19_is_refused() -> None:
    """`set_child_nice` takes 0-19 only (a negative one would ask to run above the daemon)."""
    for bad in (-1, 20):
        with pytest.raises(ValueError, match="0-19"):
            niceness.set_child_nice(bad)
    assert niceness.child_nice() == niceness.DEFAULT


async def test_harness_and_server_run_at_the_niceness(tmp_path: Path, watcher: MarkerWatcher, nice: int) -> None:
    """On the local runtime the harness (under its wrapper) and the server run `nice` levels below the caller."""
    box = LocalSandbox(tmp_path / "box", PortAllocator(31140, 31149, lock_dir=tmp_path / "locks"))
    await box.prepare()
    ws = box.host_workspace
    await box.launch("j", ["sh", "-c", REPORT, str(ws / "harness.nice")], {})
    marker = await watcher.wait(marker_path(box.host_control, "j"), 30)
    assert marker is not None and marker["exit"] == 0
    (ws / "run_server.sh").write_text(f"sh -c '{REPORT}' server.nice\nexec python3 -m http.server \"$1\"\n")
    handle = await box.start_server(20)
    await box.stop_server(handle)
    for name in ("harness.nice", "server.nice"):
        value, group = reported(ws / name)
        assert value == expected(nice), name
        if GROUPS and nice:
            assert group == nice, name


async def test_suite_workers_run_at_the_niceness(nice: int) -> None:
    """A worker process of the pool runs `nice` levels below the daemon (it stays in the daemon's session)."""
    async with anyio.create_task_group() as tg:
        pool = WorkerPool(1)
        await tg.start(pool.serve)
        assert await pool.call(os.nice, 0) == expected(nice)  # asked of the worker: it runs Python by then
        assert await pool.call(os.getsid, 0) == os.getsid(0)
        tg.cancel_scope.cancel()
