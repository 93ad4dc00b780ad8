"""The worker-process pool: the same suites and results as the in-thread path, and a structured lifetime."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from staminad.engine.suites import make_suite, suite_on_server
from staminad.suite.cpus import default_size
from staminad.suite.history import state_and_history
from staminad.suite.model import Suite, req
from staminad.suite.model import Test as SuiteTest
from staminad.suite.pool import WorkerLost, WorkerPool, run_sync
from staminad.suite.verdict import verdict_of
from tests.helpers.rawserver import Conn, RawServer, answer
from tests.suite.test_runner import SCENARIO, reference

pytestmark = pytest.mark.anyio


def _untimed(result: object) -> object:
    """A suite result without its wall time (the one field two runs never share)."""
    import msgspec

    return msgspec.structs.replace(result, seconds=0.0)  # type: ignore[type-var]


async def _both(turn: int, bugs: list[str] | None) -> tuple[object, object, Suite, Suite]:
    state, history = state_and_history(SCENARIO, turn)
    async with anyio.create_task_group() as tg:
        pool = WorkerPool(1)
        await tg.start(pool.serve)
        in_pool = await make_suite(pool, state, 7, turn, history, 1)
        in_thread = await make_suite(None, state, 7, turn, history, 1)
        with reference(turn, bugs) as url:
            pooled = await suite_on_server(pool, in_pool, url, 5.0)
            threaded = await suite_on_server(None, in_thread, url, 5.0)
        tg.cancel_scope.cancel()
    return _untimed(pooled), _untimed(threaded), in_pool, in_thread


@pytest.mark.parametrize(("turn", "bugs"), [(0, None), (15, None), (0, ["accept-null"]), (15, ["default-required"])])
async def test_pool_gives_the_in_thread_suites_and_results(turn: int, bugs: list[str] | None) -> None:
    """Generated and run in a worker process, a suite and its results equal the in-thread path's exactly."""
    pooled, threaded, in_pool, in_thread = await _both(turn, bugs)
    assert in_pool == in_thread
    assert pooled == threaded
    if bugs:
        assert not threaded.passed  # type: ignore[attr-defined]  # the mutant is caught both ways


def _one_test_suite() -> Suite:
    test = SuiteTest(name="get_x", category="validation", rule="r", steps=(req("GET", "/x", expect=(200,)),))
    return Suite(seed=0, turn=0, tests=(test,))


def _holding(hold: set[int], release: threading.Event) -> Callable[[Conn], None]:
    """A server that answers 200 `{}`, except on the connections in `hold` (by accept order): those it never answers
    until `release`."""

    def serve(conn: Conn) -> None:
        while conn.read_request() is not None:
            if conn.index in hold:
                release.wait(30)
                return
            conn.write(*answer(200, b"{}"))

    return serve


async def _kill_on_accept(pool: WorkerPool, server: RawServer, n: int) -> None:
    assert await anyio.to_thread.run_sync(server.wait_accepted, n)
    os.kill(pool.pids()[0], signal.SIGKILL)


async def test_a_worker_killed_mid_suite_is_replaced_and_the_suite_run_again() -> None:
    """A worker that dies mid-suite is replaced and the suite runs once more, on a fresh worker, to its result."""
    release = threading.Event()
    with RawServer(_holding({1}, release)).running() as server:
        async with anyio.create_task_group() as tg:
            pool = WorkerPool(1)
            await tg.start(pool.serve)
            first = pool.pids()
            tg.start_soon(_kill_on_accept, pool, server, 1)
            result = await pool.run_suite(_one_test_suite(), server.url, 5.0)
            assert result.passed and pool.restarts == 1 and pool.pids() != first
            tg.cancel_scope.cancel()
        release.set()


async def test_a_worker_lost_twice_is_the_platforms_fault() -> None:
    """A job whose worker dies twice raises WorkerLost (recorded as infra by the engine), never a suite result."""
    release = threading.Event()
    with RawServer(_holding({1, 2}, release)).running() as server:
        async with anyio.create_task_group() as tg:
            pool = WorkerPool(1)
            await tg.start(pool.serve)

            async def kill_twice() -> None:
                await _kill_on_accept(pool, server, 1)
                await _kill_on_accept(pool, server, 2)

            tg.start_soon(kill_twice)
            with pytest.raises(WorkerLost):
                await pool.run_suite(_one_test_suite(), server.url, 5.0)
            tg.cancel_scope.cancel()
        release.set()


async def test_a_cancelled_suite_stops_in_its_worker_and_the_pool_reaps_every_worker() -> None:
    """Cancelling a suite stops it in its worker (which stays up for the next job); ending the pool reaps all."""
    release = threading.Event()
    with RawServer(_holding({1}, release)).running() as server:
        async with anyio.create_task_group() as tg:
            pool = WorkerPool(2)
            await tg.start(pool.serve)
            workers = [w for w in pool._workers if w is not None]
            with anyio.CancelScope() as scope:

                async def cancel_on_accept() -> None:
                    assert await anyio.to_thread.run_sync(server.wait_accepted, 1)
                    scope.cancel()

                tg.start_soon(cancel_on_accept)
                await pool.run_suite(_one_test_suite(), server.url, 5.0)
            assert scope.cancelled_caught and pool.restarts == 0
            assert (await pool.run_suite(_one_test_suite(), server.url, 5.0)).passed
            tg.cancel_scope.cancel()
        release.set()
    assert all(w.process.returncode is not None for w in workers)


def test_default_size_leaves_a_cpu_for_the_event_loop() -> None:
    """The default pool is the CPUs this process may use, less one, and at least two (one makes, one runs)."""
    assert default_size() == max(2, len(os.sched_getaffinity(0)) - 1)


async def test_run_sync_uses_the_serving_pool_and_raises_what_the_call_raised(tmp_path: Path) -> None:
    """`run_sync` runs a function in a worker of the serving pool (a thread without one); its OSError comes back."""
    assert await run_sync(os.getpid) == os.getpid()
    async with anyio.create_task_group() as tg:
        pool = WorkerPool(1)
        await tg.start(pool.serve)
        assert await run_sync(os.getpid) in pool.pids()
        with pytest.raises(FileNotFoundError):
            await run_sync(os.stat, tmp_path / "missing")
        tg.cancel_scope.cancel()


_OWNER = """
import anyio, sys
from staminad.suite.pool import WorkerPool

async def main():
    async with anyio.create_task_group() as tg:
        pool = WorkerPool(2)
        await tg.start(pool.serve)
        print(*pool.pids(), flush=True)
        await anyio.sleep_forever()

anyio.run(main)
"""


def _gone(pid: int) -> bool:
    """Whether `pid` has exited (gone, or a zombie no one has reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_workers_die_with_a_daemon_killed_outright() -> None:
    """Workers do not outlive their daemon, even one killed with SIGKILL (no clean-up of its own ran)."""
    import subprocess
    import sys
    import time

    with subprocess.Popen([sys.executable, "-c", _OWNER], stdout=subprocess.PIPE) as owner:
        assert owner.stdout is not None
        pids = [int(p) for p in owner.stdout.readline().split()]
        assert len(pids) == 2 and not any(map(_gone, pids))
        owner.kill()
        owner.wait(timeout=10)
    deadline = time.monotonic() + 10
    while not all(map(_gone, pids)) and time.monotonic() < deadline:
        time.sleep(0.02)  # waiting on the kernel's death signal to other processes, not on our own code
    assert all(map(_gone, pids))


def test_a_suite_msgpack_cannot_carry_crosses_intact() -> None:
    """A suite with an integer beyond 64 bits (msgpack's limit) crosses to a worker and back unchanged."""
    from staminad.suite.model import Equals
    from staminad.suite.worker import SUITE, pack, unpack

    step = req("POST", "/x", {"n": 10**40}, checks=(Equals(path=("n",), value=10**40),))
    suite = Suite(seed=0, turn=0, tests=(SuiteTest(name="big", category="validation", rule="r", steps=(step,)),))
    assert unpack(pack(suite), SUITE) == suite
    assert unpack(pack(_one_test_suite()), SUITE) == _one_test_suite()


async def test_a_kept_suite_runs_in_its_worker_to_the_in_thread_verdict() -> None:
    """A kept suite runs in its worker to the in-thread verdict; a released or orphaned one is made again."""
    state, history = state_and_history(SCENARIO, 6)
    async with anyio.create_task_group() as tg:
        pool = WorkerPool(1)
        await tg.start(pool.serve)
        kept = await pool.keep(state, 7, 6, history, 1)
        suite = await make_suite(None, state, 7, 6, history, 1)
        assert kept.tests == len(suite.tests) and kept.worker is not None
        with reference(6, ["default-required"]) as url:
            threaded = verdict_of(await suite_on_server(None, suite, url, 5.0), "detailed")
            assert threaded.failed and threaded.feedback
            assert await pool.run_kept(kept, url, 5.0, "detailed") == threaded
            os.kill(pool.pids()[0], signal.SIGKILL)  # seen dead before the run, or during it: made again either way
            assert await pool.run_kept(kept, url, 5.0, "detailed") == threaded
            await pool.release(kept)
            assert kept.worker is None
            assert await pool.run_kept(kept, url, 5.0, "detailed") == threaded
        tg.cancel_scope.cancel()


async def test_a_call_runs_on_the_control_worker_while_every_suite_slot_is_taken() -> None:
    """`call` neither waits for a suite slot nor runs beside suites: it has a worker and limits of its own."""
    pool = WorkerPool(1, per_worker=1)
    async with anyio.create_task_group() as tg:
        await tg.start(pool.serve)
        holder = object()
        await pool.slots.acquire_on_behalf_of(holder)  # every suite slot taken
        try:
            with anyio.fail_after(60):
                pid = await pool.call(os.getpid)
        finally:
            pool.slots.release_on_behalf_of(holder)
        assert pid in pool.pids() and pid != pool.pids()[0] and len(pool.pids()) == 2
        tg.cancel_scope.cancel()


async def test_suites_being_made_leave_slots_for_suites_to_run() -> None:
    """Making suites holds at most half the slots: the other half stays free for suites whose server waits."""
    pool = WorkerPool(1, per_worker=4)
    assert pool.making.total_tokens == 2 and pool.slots.total_tokens == 4


async def test_each_suite_worker_runs_on_one_cpu_and_the_control_worker_on_all() -> None:
    """Suite workers are pinned to one CPU each (their threads hand the GIL on one core); the control worker is not."""
    usable = os.sched_getaffinity(0)
    pool = WorkerPool(2)
    async with anyio.create_task_group() as tg:
        await tg.start(pool.serve)
        control = await pool.call(os.getpid)
        suite_workers = [pid for pid in pool.pids() if pid != control]
        assert [len(os.sched_getaffinity(pid)) for pid in suite_workers] == [1, 1]
        assert all(os.sched_getaffinity(pid) <= usable for pid in suite_workers)
        assert os.sched_getaffinity(control) == usable
        tg.cancel_scope.cancel()
