"""The daemon's pool of worker processes (`suite.worker`): suites and suite generation use every core.

In one process every suite's requests, parsing and checks, and every turn's suite generation, share
one GIL with the event loop, so the daemon's throughput is what one core allows and its control plane
(the socket, markers, events) waits behind them. The pool runs that work in `size` worker processes
(`default_size()`: the CPUs this process may use, less one for the event loop, at least two), each
serving up to `per_worker` jobs at once in threads of its own (a suite mostly waits on its server).
One more worker serves only `call`s (the sandboxes' /proc scans and file walks, `run_sync`), under limits of its
own: at 500 scenarios on 2 cores those waited for a slot behind hundreds of suites being made ahead, then ran in a
thread beside CPU-bound ones, waiting up to a switch interval for the GIL after each of their thousands of reads,
and every server start stalled behind them (nothing was tested in minutes; py-spy and the store, this issue).

Suites and results cross as msgpack (`worker.pack`): unpickling a suite cost the event loop ~15 ms. The
engine crosses neither: `keep` leaves an attempt's suite in the worker that generated it (`KeptSuite`, a
handle), `run_kept` runs it there and brings back only its `SuiteVerdict` (counts, feedback, the results
compressed as the store keeps them), and `release` has the worker forget it. Decoding each run's results
on the loop had become the daemon's largest cost per attempt (py-spy, 200 scenarios).

Lifetime is structured: `serve` is started in the owner's task group (`tg.start(pool.serve)`) and
starts the workers; when it ends (a stop, a cancel, a crash of the owner) each worker's stdin is
closed, and a worker not gone within `CLOSE_GRACE` is killed; every one is reaped. A worker also
dies with the daemon itself (see `suite.worker`). Every wait is bounded: a cancelled job is stopped
and waited for `grace` seconds at most, then its worker is killed.

A worker that dies with jobs in flight (killed, out of memory) is replaced, and each of its jobs is
run again once on another worker; a second death raises `WorkerLost`, which the engine records as a
platform fault (infra, retried), never as the agent's failure.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from subprocess import PIPE
from typing import Any, TypeVar

import anyio
import anyio.abc
import anyio.to_thread
from anyio.streams.buffered import BufferedByteReceiveStream

import staminad
from staminad.bench.schema import State
from staminad.suite.cpus import default_size, usable_set
from staminad.suite.feedback import FeedbackLevel
from staminad.suite.history import History
from staminad.suite.model import Suite
from staminad.suite.niceness import lowered
from staminad.suite.runner import SuiteResult
from staminad.suite.verdict import SuiteVerdict
from staminad.suite.worker import (
    HEADER,
    RESULT,
    SUITE,
    VERDICT,
    Call,
    Done,
    Drop,
    Failed,
    Generate,
    Reply,
    Request,
    RunSuite,
    Stop,
    frame,
    pack,
    pin,
    unpack,
)

CLOSE_GRACE = 5.0  # seconds a worker has to exit once its stdin is closed
STOP_GRACE = 30.0  # seconds a stopped job has to let go (a suite's request in flight ends at once)
GENERATE_LIMIT = 600.0  # seconds: generation at turn 1,000 takes seconds; anything near this is a hung worker
PER_WORKER = 16
CONTROL_SLOTS = 64  # `call`s at once on the control worker: short /proc scans and file walks, each in a thread
# Imported by name, not run as `__main__`: the messages it pickles must name their module.
_WORKER_MAIN = "from staminad.suite.worker import main; main()"
_ROOT = str(Path(staminad.__file__).resolve().parent.parent)  # where a worker imports `staminad` from


log = logging.getLogger(__name__)


T = TypeVar("T")


class WorkerLost(Exception):
    """A job's worker died under it twice: the platform's fault, not the job's."""


class WorkerBug(Exception):
    """The job raised inside its worker (a bug of ours); the message is the worker's traceback."""


class _Pending:
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.reply: Reply | None = None  # None once done: the worker died first


class _Worker:
    """One worker process: its pipes, its jobs in flight, and the task that reads its replies."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self.stdin = process.stdin
        self.stdout = BufferedByteReceiveStream(process.stdout)
        self.pending: dict[int, _Pending] = {}
        self.send_lock = anyio.Lock()
        self.dead = False

    async def read(self) -> None:
        """Hand each reply to its job until the worker's stdout ends; then every job still waiting learns it died."""
        try:
            while True:
                size = HEADER.unpack(await self.stdout.receive_exactly(HEADER.size))[0]
                reply: Reply = pickle.loads(await self.stdout.receive_exactly(size))
                pending = self.pending.get(reply.job)
                if pending is not None:
                    pending.reply = reply
                    pending.done.set()
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        except Exception:  # an unreadable reply: this worker can no longer be trusted to frame its pipe
            log.exception("worker %d sent an unreadable reply; it is replaced", self.process.pid)
            self.kill()
        finally:
            self.dead = True
            for pending in self.pending.values():
                pending.done.set()
            with anyio.CancelScope(shield=True):
                await self.reap()

    async def send(self, message: Request) -> None:
        try:
            async with self.send_lock:
                await self.stdin.send(frame(message))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            self.kill()  # its reader sees the end and fails every job of it

    def kill(self) -> None:
        self.dead = True
        if self.process.returncode is None:
            self.process.kill()

    async def reap(self) -> None:
        """Close its stdin, give it `CLOSE_GRACE` to exit, kill it otherwise, and wait for it (bounded)."""
        self.dead = True
        await self.stdin.aclose()
        with anyio.move_on_after(CLOSE_GRACE):
            await self.process.wait()
        if self.process.returncode is None:
            self.kill()
        with anyio.move_on_after(CLOSE_GRACE):
            await self.process.aclose()  # waits for it, and closes its pipes

    async def call(self, job: int, message: Generate | RunSuite | Call, limit: float, grace: float) -> Any:
        pending = self.pending[job] = _Pending()
        try:
            await self.send(message)
            with anyio.move_on_after(limit):
                await pending.done.wait()
            if not pending.done.is_set():  # hung: a lost worker, as one that died
                self.kill()
                raise _Died
        except _Died:
            raise
        except BaseException:
            with anyio.CancelScope(shield=True):
                if not self.dead:
                    # Sent even when the reply came in with the cancel: a suite the worker kept for this caller,
                    # who is gone, is let go there too (Stop forgets it; for a finished job it does nothing else).
                    await self.send(Stop(job=job))
                    if not pending.done.is_set():
                        with anyio.move_on_after(grace):
                            await pending.done.wait()
                        if not pending.done.is_set():
                            self.kill()  # it did not let go: nothing of it may outlive the caller's wait
            raise
        finally:
            del self.pending[job]
        reply = pending.reply
        if reply is None:
            raise _Died
        if isinstance(reply, Failed):
            bug = WorkerBug(reply.error)
            if reply.raised:
                raise pickle.loads(reply.raised) from bug
            raise bug
        assert isinstance(reply, Done)
        return reply.value


class _Died(Exception):
    pass


class KeptSuite:
    """An attempt's suite kept in the worker that generated it (`WorkerPool.keep`): the daemon holds its worker,
    its key there, its size, and what made it (to make it again should that worker die). Running it sends the
    key, not the suite; `WorkerPool.release` lets the worker forget it."""

    def __init__(self, args: tuple[State, int, int, History | None, int]) -> None:
        self.args = args
        self.worker: _Worker | None = None
        self.key = 0
        self.tests = 0  # the suite's tests
        self.steps = 0  # its requests (with each test's reset): what bounds its run


class WorkerPool:
    """`size` worker processes, started and ended by `serve`; `generate` and `run_suite` run a job on one."""

    def __init__(self, size: int | None = None, per_worker: int = PER_WORKER) -> None:
        self.size = default_size() if size is None else size
        if self.size < 1:
            raise ValueError("a worker pool has at least one worker")
        self.slots = anyio.CapacityLimiter(self.size * per_worker)  # suites and their generation
        # Suites being made take at most half the slots: a suite whose server is up waiting is run first, and a
        # flood of suites made ahead (hundreds of scenarios launched at once) cannot hold every slot.
        self.making = anyio.CapacityLimiter(max(1, self.size * per_worker // 2))
        self.control_slots = anyio.CapacityLimiter(CONTROL_SLOTS)  # `call`s, on the control worker
        # The suite workers, then the control worker (the last): a sandbox's /proc scan or file walk on the turn's
        # critical path neither queues behind hundreds of suites for a slot nor shares a GIL with their threads.
        self._workers: list[_Worker | None] = [None] * (self.size + 1)
        self._tg: anyio.abc.TaskGroup | None = None
        self._jobs = 0
        self.restarts = 0  # workers replaced after dying
        self._spawning = anyio.Lock()

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start the workers, run until cancelled, then end and reap every one."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                for i in range(self.size):  # the control worker starts with the first `call`
                    await self._spawn(i)
                task_status.started()
                _serving.append(self)
                await anyio.sleep_forever()
        finally:
            self._tg = None
            if self in _serving:
                _serving.remove(self)
            with anyio.CancelScope(shield=True):
                for worker in self._workers:
                    if worker is not None and worker.process.returncode is None:
                        await worker.reap()

    def pids(self) -> list[int]:
        """The process ids of the live workers."""
        return [w.process.pid for w in self._workers if w is not None and not w.dead]

    async def _spawn(self, i: int) -> _Worker:
        assert self._tg is not None
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (_ROOT, os.environ.get("PYTHONPATH"))))}
        argv = [sys.executable, "-c", _WORKER_MAIN, str(os.getpid())]
        process = await anyio.open_process(
            lowered(argv),  # below the loop's priority
            stdin=PIPE,
            stdout=PIPE,
            stderr=None,
            env=env,
        )
        if i < self.size:  # a suite worker runs on one CPU (`worker.pin`), spread from the second of ours on
            cpus = sorted(usable_set())
            pin(process.pid, cpus[(i + 1) % len(cpus)])
        worker = self._workers[i] = _Worker(process)
        self._tg.start_soon(worker.read)
        return worker

    async def _pick(self, control: bool = False) -> _Worker:
        """The least busy live suite worker, or the control worker; a dead one is replaced first."""
        if self._tg is None:
            raise RuntimeError("the worker pool is not serving")
        lane = range(self.size, self.size + 1) if control else range(self.size)
        async with self._spawning:  # one caller replaces a dead worker; the others then find the new one
            for i in lane:
                worker = self._workers[i]
                if worker is None or worker.dead:
                    self.restarts += worker is not None
                    await self._spawn(i)
        live = [w for w in (self._workers[i] for i in lane) if w is not None and not w.dead]
        return min(live, key=lambda w: len(w.pending))

    async def _run(self, make: Any, limit: float, grace: float, control: bool = False) -> Any:
        return (await self._run_on(make, limit, grace, control))[2]

    async def _run_on(self, make: Any, limit: float, grace: float, control: bool = False) -> tuple[_Worker, int, Any]:
        """(the worker, the job's number, its value): the job run on the least busy suite worker (`control`: on the
        control worker), again once if it died."""
        for attempt in (1, 2):
            async with self.control_slots if control else self.slots:
                worker = await self._pick(control)
                self._jobs += 1
                job = self._jobs
                try:
                    return worker, job, await worker.call(job, make(job), limit, grace)
                except _Died:
                    if attempt == 2:
                        raise WorkerLost("a worker process died twice while running this job") from None
        raise AssertionError("unreachable")

    async def keep(self, state: State, seed: int, turn: int, history: History | None, attempt: int) -> KeptSuite:
        """`generate_suite(...)` in a worker, the suite kept there (`KeptSuite`): only its handle comes back."""
        args = (state, seed, turn, history, attempt)
        kept = KeptSuite(args)
        await self._keep(kept)
        return kept

    async def _keep(self, kept: KeptSuite) -> None:
        def make(job: int) -> Generate:
            state, seed, turn, history, attempt = kept.args
            return Generate(job=job, state=state, seed=seed, turn=turn, history=history, attempt=attempt, keep=True)

        async with self.making:
            kept.worker, kept.key, (kept.tests, kept.steps) = await self._run_on(make, GENERATE_LIMIT, STOP_GRACE)

    async def run_kept(self, kept: KeptSuite, url: str, timeout: float, feedback: FeedbackLevel) -> SuiteVerdict:
        """`run_suite` of a kept suite in the worker that keeps it, to its verdict (feedback at `feedback`); a worker
        gone makes it again on another (generation is pure: the same suite), once; a cancel stops it there and
        waits (bounded)."""
        limit = kept.steps * (timeout + 1.0) + STOP_GRACE
        for attempt in (1, 2):
            if kept.worker is None or kept.worker.dead:
                await self._keep(kept)
            assert kept.worker is not None
            async with self.slots:
                self._jobs += 1
                job = self._jobs
                message = RunSuite(job=job, suite=b"", url=url, timeout=timeout, kept=kept.key, feedback=feedback)
                try:
                    packed: bytes = await kept.worker.call(job, message, limit, timeout + 5.0)
                    return unpack(packed, VERDICT)
                except _Died:
                    if attempt == 2:
                        raise WorkerLost("a worker process died twice while running this suite") from None
        raise AssertionError("unreachable")

    async def release(self, kept: KeptSuite) -> None:
        """Have the worker forget a kept suite (a worker gone has forgotten it already)."""
        worker, kept.worker = kept.worker, None
        if worker is not None and not worker.dead:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_GRACE):
                await worker.send(Drop(key=kept.key))

    async def generate(self, state: State, seed: int, turn: int, history: History | None, attempt: int) -> Suite:
        """`generate_suite(state, seed, turn, history, attempt)` in a worker."""
        async with self.making:
            packed: bytes = await self._run(
                lambda job: Generate(job=job, state=state, seed=seed, turn=turn, history=history, attempt=attempt),
                GENERATE_LIMIT,
                STOP_GRACE,
            )
        return unpack(packed, SUITE)

    async def run_suite(self, suite: Suite, url: str, timeout: float) -> SuiteResult:
        """`run_suite` against the server at `url` in a worker; a cancel stops it there and waits (bounded)."""
        # Bounded by the suite itself: each request by `timeout`, and a server that stops answering ends it early.
        steps = sum(1 + len(t.steps) for t in suite.tests)
        limit = steps * (timeout + 1.0) + STOP_GRACE
        data = pack(suite)
        packed: bytes = await self._run(
            lambda job: RunSuite(job=job, suite=data, url=url, timeout=timeout), limit, timeout + 5.0
        )
        return unpack(packed, RESULT)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in the control worker: `fn` a module-level function, its arguments and result plain data."""
        target = f"{fn.__module__}:{fn.__qualname__}"
        value: T = await self._run(
            lambda job: Call(job=job, target=target, args=args), GENERATE_LIMIT, STOP_GRACE, control=True
        )
        return value


_serving: list[WorkerPool] = []  # the pools serving in this process, latest last


async def run_sync(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` off the event loop: in a worker of this process's serving pool when there is one (its CPU then
    is not the loop's), else in a thread. For blocking, repeatable work on plain data (/proc scans, file
    walks): a worker lost under it runs it again in a thread."""
    if _serving:
        with contextlib.suppress(WorkerLost):
            return await _serving[-1].call(fn, *args)
    return await anyio.to_thread.run_sync(fn, *args)
