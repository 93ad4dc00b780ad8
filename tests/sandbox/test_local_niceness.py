"""Agents, servers and suite workers run below the daemon's CPU priority (`suite.niceness`), or at it with 0; a
daemon that raised itself puts agents and servers back at the default and keeps its workers raised."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
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


ROOT = os.geteuid() == 0  # raising a priority needs root (or CAP_SYS_NICE)


def expected(n: int) -> int:
    """The nice value an agent's child started `n` levels below the daemon gets: below the box's default where the
    daemon raised itself (the kernel caps it at 19)."""
    return min(19, os.getpriority(os.PRIO_PROCESS, 0) + niceness.raised() + n)


@pytest.fixture(params=[(10, 0), (0, 0)] + ([(10, 5), (0, 5)] if ROOT else []), ids=lambda p: f"nice{p[0]}-raise{p[1]}")
def nice(request: pytest.FixtureRequest) -> Iterator[int]:
    """The children's niceness set for one test, and (as root) this process raised as the daemon raises itself;
    the default niceness and this process's priority put back after it."""
    child, lift = request.param
    before = os.getpriority(os.PRIO_PROCESS, 0)
    niceness.set_child_nice(child)
    if lift:
        assert niceness.raise_daemon(lift) == lift
    try:
        yield child
    finally:  # nothing of the raise may outlive the test: later tests in this worker run at the default
        niceness.set_child_nice(niceness.DEFAULT)
        niceness._raised[0] = 0
        niceness.set_threads(before)


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
    if nice == 0 and niceness.raised() == 0:  # nothing to change: the argv as it was
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
    """A suite worker runs `nice` levels below the default, under a raised daemon's loop, in the daemon's session."""
    async with anyio.create_task_group() as tg:
        pool = WorkerPool(1)
        await tg.start(pool.serve)
        assert await pool.call(os.nice, 0) == expected(nice)  # asked of the worker: it runs Python by then
        assert await pool.call(os.getsid, 0) == os.getsid(0)
        tg.cancel_scope.cancel()


RAISE = """
import os, sys
from staminad.suite import niceness
got = niceness.raise_daemon(int(sys.argv[1]))
group = open("/proc/self/autogroup").read().split()[-1] if os.path.exists("/proc/self/autogroup") else "-"
print(got, niceness.raised(), os.getpriority(os.PRIO_PROCESS, 0), group)
"""


def _raise_in_own_session(lift: int, prefix: list[str]) -> tuple[int, int, int, int | None]:
    """(levels obtained, levels above the default, nice value, autogroup nice) of a fresh session leader that
    asked for `lift` levels."""
    done = subprocess.run(
        [*prefix, sys.executable, "-c", RAISE, str(lift)],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0, done.stderr
    got, above, value, group = done.stdout.split()
    return int(got), int(above), int(value), None if group == "-" else int(group)


@pytest.mark.skipif(not ROOT, reason="raising a priority needs root")
def test_a_session_leader_raises_itself_and_its_sessions_group() -> None:
    """As root, a daemon leading its session runs `n` levels up, its session's autogroup with it."""
    base = os.getpriority(os.PRIO_PROCESS, 0)
    got, above, value, group = _raise_in_own_session(7, [])
    assert got == 7 and value == max(-20, base - 7) and above == max(0, -value)
    if GROUPS:
        assert group == -7  # a new session's group starts at 0


@pytest.mark.skipif(not ROOT, reason="starting a process raised needs root")
def test_a_daemon_started_raised_counts_it_without_raising_itself() -> None:
    """Started at nice -3 (systemd's `Nice=-3`) with no raise asked, the daemon knows it runs 3 levels up."""
    got, above, value, _ = _raise_in_own_session(0, ["nice", "-n", "-3"])
    assert (got, value) == (0, min(19, os.getpriority(os.PRIO_PROCESS, 0) - 3)) and above == max(0, -value)


def test_a_daemon_that_may_not_raise_itself_stays_at_its_priority() -> None:
    """Without the privilege (run as nobody) the raise obtains nothing and changes nothing; a bad count is refused."""
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if ROOT else []
    base = os.getpriority(os.PRIO_PROCESS, 0)
    got, above, value, group = _raise_in_own_session(10, prefix)
    assert got == 0 and value == base and above == max(0, -base)
    if GROUPS:
        assert group == 0
    for bad in (-1, 40):
        with pytest.raises(ValueError, match="0-39"):
            niceness.raise_daemon(bad)
