"""A worker process of the daemon's pool (`suite.pool`): suites and suite generation, off the daemon's GIL.

Started by the pool with its parent's pid as its one argument (see `pool._WORKER_MAIN`). Requests
come on stdin and replies go on the original stdout, each a 4-byte big-endian length then a pickled
message (`Request`, `Reply`); fd 1 is pointed at stderr first, so a stray print cannot corrupt the
frames. Every request runs in a thread of its own (a suite mostly waits on its server, so one
worker serves several at once), and `Stop` ends a running suite as a cancel does in the daemon's
own thread (`runner.run_suite`).

The envelopes are pickled (a `Call`'s arguments are any plain data, a `Path` included); suites and
results inside them are msgpack (`pack`), which keeps a suite's JSON values as they were made and is
far cheaper for the event loop to decode, with pickle for a value msgpack cannot carry (an integer
beyond 64 bits), so results are identical to the in-thread path's. Both ends are our own code;
nothing a sandbox holds is ever unpickled.

An attempt's suite is generated with `keep` and stays here, under the number of the job that made it,
until a `Drop`: the daemon then runs it by that number, so no suite crosses the pipe at all (encoding,
writing and framing hundreds of tests per attempt held the daemon's event loop).

The worker dies with the daemon: the kernel kills it when its parent exits (PR_SET_PDEATHSIG), and
it exits on its own when stdin reaches end of file (the parent closed it, or is gone).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import pickle
import signal
import struct
import sys
import threading
import traceback
from typing import Any, BinaryIO, TypeVar

import msgspec

from staminad.bench.schema import State
from staminad.suite.generate import generate_suite
from staminad.suite.history import History
from staminad.suite.http11 import Http11Transport
from staminad.suite.model import Suite
from staminad.suite.runner import Bodies, SuiteResult, bodies, run_suite_blocking
from staminad.suite.verdict import SuiteVerdict, verdict_of

HEADER = struct.Struct(">I")
_PR_SET_PDEATHSIG = 1


class Generate(msgspec.Struct, frozen=True, kw_only=True):
    """Generate the suite of one attempt (`generate_suite`'s arguments)."""

    job: int
    state: State
    seed: int
    turn: int
    history: History | None
    attempt: int
    keep: bool = False  # keep the suite here under this job's number and reply (tests, steps), not the suite


class RunSuite(msgspec.Struct, frozen=True, kw_only=True):
    """Run `suite` against the server at `url` (plain `http://host:port`), each request bounded by `timeout`."""

    job: int
    suite: bytes  # `pack(suite)`, or empty with `kept`
    url: str
    timeout: float
    kept: int = 0  # the job number of a `Generate(keep=True)` of this worker whose suite to run (0: `suite`)
    feedback: str = ""  # a feedback level: reply the run's `SuiteVerdict` at it, not the whole `SuiteResult`


class Call(msgspec.Struct, frozen=True, kw_only=True):
    """Call the module-level function `target` (`module:name`) with `args`: blocking work such as /proc scans."""

    job: int
    target: str
    args: tuple[Any, ...]


class Stop(msgspec.Struct, frozen=True, kw_only=True):
    """Stop job `job` (a suite: its request in flight is interrupted and the rest are not run)."""

    job: int


class Drop(msgspec.Struct, frozen=True, kw_only=True):
    """Forget the suite kept under `key` (its attempt is over)."""

    key: int


class Done(msgspec.Struct, frozen=True, kw_only=True):
    job: int
    value: Any  # `pack` of a Suite or a SuiteResult, or what a Call returned


class Failed(msgspec.Struct, frozen=True, kw_only=True):
    """The job raised: a bug of ours (nothing a server sends raises out of a suite); `error` is its traceback."""

    job: int
    error: str
    raised: bytes = b""  # the exception itself, pickled, when it pickles (an OSError does): the caller raises it


Request = Generate | RunSuite | Call | Stop | Drop
Reply = Done | Failed


SUITE = msgspec.msgpack.Decoder(Suite)
RESULT = msgspec.msgpack.Decoder(SuiteResult)
VERDICT = msgspec.msgpack.Decoder(SuiteVerdict)
T = TypeVar("T")


def pack(value: Suite | SuiteResult | SuiteVerdict) -> bytes:
    """A suite or its result as bytes: msgpack (a suite of 300 tests decodes in ~1 ms, against ~15 ms unpickled, on
    the event loop), or pickle where msgpack cannot carry a value (an integer beyond 64 bits)."""
    try:
        return b"m" + msgspec.msgpack.encode(value)
    except (OverflowError, TypeError):
        return b"p" + pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(data: bytes, decoder: msgspec.msgpack.Decoder[T]) -> T:
    if data[:1] == b"m":
        return decoder.decode(data[1:])
    value: T = pickle.loads(data[1:])
    return value


def frame(message: Request | Reply) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(data)) + data


class _Jobs:
    """The jobs running in this worker, and the one lock that orders replies on the pipe."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.write_lock = threading.Lock()
        self.guard = threading.Lock()
        self.running: dict[int, tuple[threading.Event, Http11Transport | None]] = {}
        # Suites generated with `keep` (and their bodies, encoded then), by the job that made them, until a `Drop`.
        self.kept: dict[int, tuple[Suite, Bodies]] = {}

    def reply(self, message: Reply) -> None:
        data = frame(message)
        with self.write_lock:
            self.out.write(data)
            self.out.flush()

    def stop(self, job: int) -> None:
        """End the job: a suite's request in flight is interrupted; a suite it keeps (or is making) is forgotten."""
        with self.guard:
            entry = self.running.get(job)
            self.kept.pop(job, None)
        if entry is not None:
            entry[0].set()
            if entry[1] is not None:
                entry[1].interrupt()

    def begin(self, job: int) -> threading.Event:
        """Register `job` before its thread starts, so a Stop read right after its request is never lost."""
        stop = threading.Event()
        with self.guard:
            self.running[job] = (stop, None)
        return stop

    def run(self, request: Generate | RunSuite | Call, stop: threading.Event) -> None:
        try:
            value: Any
            if isinstance(request, Call):
                module, _, name = request.target.partition(":")
                value = getattr(importlib.import_module(module), name)(*request.args)
            elif isinstance(request, Generate):
                suite = generate_suite(request.state, request.seed, request.turn, request.history, request.attempt)
                if request.keep:
                    made = (suite, bodies(suite))  # encoded now, while the harness works: not per request
                    with self.guard:  # a job stopped meanwhile keeps nothing: its caller is gone
                        if not stop.is_set():
                            self.kept[request.job] = made
                    value = (len(suite.tests), sum(1 + len(t.steps) for t in suite.tests))
                else:
                    value = pack(suite)
            else:
                suite, sent = self.kept[request.kept] if request.kept else (unpack(request.suite, SUITE), None)
                with Http11Transport.for_url(request.url, request.timeout) as transport:
                    with self.guard:
                        self.running[request.job] = (stop, transport)
                    if stop.is_set():
                        transport.interrupt()
                    result = run_suite_blocking(suite, transport, None, stop, sent)
                    value = pack(verdict_of(result, request.feedback) if request.feedback else result)  # type: ignore[arg-type]
            self.reply(Done(job=request.job, value=value))
        except Exception as exc:  # noqa: BLE001 - any failure of a job goes back to the daemon, which raises it there
            try:
                raised = pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 - not picklable: the traceback alone goes back
                raised = b""
            self.reply(Failed(job=request.job, error=traceback.format_exc(), raised=raised))
        finally:
            with self.guard:
                self.running.pop(request.job, None)


def _read_exactly(source: BinaryIO, n: int) -> bytes | None:
    data = bytearray()
    while len(data) < n:
        chunk = source.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when the daemon ends; exit now if it already has."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the signal was armed
        os._exit(0)


def serve(source: BinaryIO, out: BinaryIO) -> None:
    """Read requests until end of file, each run in a thread of its own."""
    jobs = _Jobs(out)
    while True:
        header = _read_exactly(source, HEADER.size)
        if header is None:
            return
        body = _read_exactly(source, HEADER.unpack(header)[0])
        if body is None:
            return
        request: Any = pickle.loads(body)
        if isinstance(request, Stop):
            jobs.stop(request.job)
        elif isinstance(request, Drop):
            jobs.kept.pop(request.key, None)
        else:
            threading.Thread(target=jobs.run, args=(request, jobs.begin(request.job)), daemon=True).start()


def pin(pid: int, cpu: int) -> None:
    """Run process `pid` (a suite worker the pool has just started, before its first job: its job threads inherit
    this) on one CPU. A suite worker's threads (suites waiting on their servers, suites being made) hand the GIL to
    each other thousands of times a second: on one core that costs a switch, across two a wake-up of the other
    core each time. A worker starts no process, so nothing else inherits the pin."""
    with contextlib.suppress(OSError, ValueError):
        os.sched_setaffinity(pid, {cpu})


def main() -> None:
    _die_with_parent(int(sys.argv[1]))
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # fd 1 is stderr from here: only `out` carries frames
    serve(sys.stdin.buffer, out)
    # End of input: the daemon is done with this worker (or gone). Jobs still running are abandoned with it.
    os._exit(0)
