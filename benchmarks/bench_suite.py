"""Suite wall time against the server zoo: our runner, our runner without the ACK fix, pytest + requests.

For every zoo server (`benchmarks/zoo/`: the reference logic behind the HTTP stacks agents pick)
and turns 0, 50 and 100 of one seed, the same suite runs through:

- `ours`: the engine's runner and its HTTP/1.1 transport, with the step bodies encoded before the clock
  starts (the daemon's workers encode them when they make the suite, while the harness works);
- `ours-noqa`: the same with TCP_QUICKACK off (`Http11Transport(quickack=False)`), what the fix buys;
- `pytest+session`: the tests written out as a pytest module over one `requests.Session` (keep-alive,
  the strongest form of the paper's approach), run by pytest in a subprocess;
- `pytest+requests`: the same with plain `requests.request` (a connection per request);
- `pytest-start`: pytest on the same module with no tests (its imports, no requests): the startup every
  pytest run pays whatever the suite; `net/ours` is `pytest+session` less it, against `ours`.

Every pytest runs as a clean pytest would: with `PYTEST_DISABLE_PLUGIN_AUTOLOAD=1` (the plugins installed
in this environment for our own tests are not loaded; with them a run took ~4.3 s longer) and
`-p no:cacheprovider`.
- `floor`: the very requests `ours` sent, replayed in order by a minimal blocking client (one write per
  request, quickack, no checks, no event loop; against a server that closes after each answer, the
  next connection dialled while the server works, as `ours` does): the server's own time per request
  plus loopback, the wall time no client can beat on this machine.

Each figure is the median of --repeats runs, taken round-robin over the variants so that each
sees the same machine load; a variant whose first run takes longer than --cap
seconds runs once (said in the table, xN), one whose runs take under QUICK seconds runs QUICK_FACTOR
times as often (a 0.1 s suite is at the mercy of a busy machine's scheduler; xN again), and one whose
run would take longer than --budget seconds (scaled from its previous turn by request count) is
skipped ("-", as is a variant `--variants` leaves out). Ratios are against `floor` and `pytest+session`
of the same server, turn and run of this script (`paired`: the median of ours/floor over the rounds, each
pair run back to back, so that the machine's speed drifting between rounds cancels out); `session/floor` is the
most any client could gain over pytest + `requests.Session` on that server (the suite's requests are
sequential: each test resets the server's state, and each step depends on the one before).

`--smoke`: the first 20 tests of turn 0 on stdlib-http11 only, once per variant.

`--pin CPU` runs this script and every zoo server on that one CPU. Each request's wall is then the server's CPU
time plus the client's, with no wake-up across cores: the steadiest figure on a shared virtual machine, where
unpinned runs of one cell scatter by +-20% (measured on this project's 2-core box, back-to-back runs of the same
suite: floor 0.88-1.25 s unpinned, 1.01-1.11 s pinned).

Run: python benchmarks/bench_suite.py [--seed 0] [--turns 0,50,100] [--repeats 3] [--stacks a,b] [--cap 20]
     [--variants floor,ours,...] [--pin CPU] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).parents[1]))  # run as a script: `benchmarks.zoo` from the repository root
from benchmarks import zoo
from staminad.bench.scenario import ScenarioParams, generate
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.http11 import Http11Transport
from staminad.suite.model import Absent, Equals, IsInteger, ListIds, Suite
from staminad.suite.runner import bodies, run_suite

Request = tuple[str, str, bytes | None]

PRELUDE = """import json, math, requests
BASE = {base!r}
SESSION = requests.Session() if {session!r} else requests
def same(a, e):
    if isinstance(e, bool) or isinstance(a, bool):
        return type(a) is type(e) and a == e
    if isinstance(e, (int, float)) and isinstance(a, (int, float)):
        return math.isclose(a, e, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(e, list) and isinstance(a, list):
        return len(a) == len(e) and all(same(x, y) for x, y in zip(a, e))
    return a == e
def call(method, path, body, expect):
    kw = {{"json": body}} if body is not ... else {{}}
    r = SESSION.request(method, BASE + path, timeout=5, allow_redirects=False, **kw)
    assert r.status_code in expect, f"{{method}} {{path}} returned {{r.status_code}}"
    return r
"""


def to_pytest(suite: Suite, base: str, session: bool) -> str:
    """The suite as a pytest module, one test function per test, as a person would write it with requests."""
    out = [PRELUDE.format(base=base, session=session)]
    for i, test in enumerate(suite.tests):
        name = re.sub(r"\W", "_", test.name)  # a test's name may hold what a Python name may not (`client-id`)
        out.append(f"def test_{i}_{name}():")
        out.append("    call('POST', '/reset', ..., (200, 204))")
        for step in test.steps:
            body = repr(step.body) if step.has_body else "..."
            out.append(f"    r = call({step.method!r}, {step.path!r}, {body}, {tuple(step.expect)!r})")
            for check in step.checks:
                if isinstance(check, Equals):
                    at = "".join(f"[{k!r}]" for k in check.path)
                    out.append(f"    assert same(r.json(){at}, {check.value!r})")
                elif isinstance(check, Absent):
                    out.append(f"    assert {check.key!r} not in r.json()")
                elif isinstance(check, IsInteger):
                    at = "".join(f"[{k!r}]" for k in check.path)
                    out.append(f"    assert type(r.json(){at}) is int")
                elif isinstance(check, ListIds):
                    out.append(f"    assert sorted(str(o['id']) for o in r.json()) == {sorted(check.ids)!r}")
        out.append("")
    return "\n".join(out)


class Recording:
    """A transport that records every request it forwards (for the floor's replay)."""

    def __init__(self, inner: Http11Transport) -> None:
        self.inner = inner
        self.sent: list[Request] = []

    def request(
        self, method: str, path: str, body: bytes | None, content_type: str | None = "application/json"
    ) -> tuple[int, bytes]:
        self.sent.append((method, path, body))
        return self.inner.request(method, path, body, content_type)


async def ours(suite: Suite, base: str, quickack: bool, record: list[Request] | None = None) -> tuple[float, int]:
    # The bodies are encoded before the clock starts, as the daemon's workers do when they make the suite.
    sent = bodies(suite)
    async with Http11Transport.for_url(base, quickack=quickack) as fast:
        transport = Recording(fast) if record is not None else fast
        t0 = time.perf_counter()
        result = await run_suite(suite, transport, sent=sent)
        wall = time.perf_counter() - t0
    assert result.passed, [f.message for f in result.failures[:2]]
    if record is not None and isinstance(transport, Recording):
        record += transport.sent
    return wall, result.requests


def floor(base: str, requests: list[Request]) -> float:
    """Replay `requests` in order over a minimal blocking client that never leaves an ACK delayed."""
    host, port = base.removeprefix("http://").split(":")
    quickack = getattr(socket, "TCP_QUICKACK", None)
    wires = [
        (
            f"{m} {p} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {len(b or b'')}\r\n"
            + ("Content-Type: application/json\r\n" if b is not None else "")
            + "\r\n"
        ).encode()
        + (b or b"")
        for m, p, b in requests
    ]

    def dial() -> socket.socket:
        sock = socket.create_connection((host, int(port)))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    sock: socket.socket | None = None
    spare: socket.socket | None = None
    closes = False  # the server closed the connection after its last answer
    t0 = time.perf_counter()
    for wire in wires:
        if sock is None:
            sock, spare = (spare, None) if spare is not None else (dial(), None)
        sock.sendall(wire)
        if closes and spare is None:
            spare = dial()  # set up while the server works on this request
        buf = b""
        while b"\r\n\r\n" not in buf:
            if quickack is not None:
                sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
            buf += sock.recv(65536)
        head, body = buf.split(b"\r\n\r\n", 1)
        lower = head.lower()
        if b"content-length:" in lower:
            length = int(lower.split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
            while len(body) < length:
                if quickack is not None:
                    sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
                body += sock.recv(65536)
        else:
            while chunk := sock.recv(65536):
                body += chunk  # close-delimited: the body ends at the close
        closes = lower.startswith(b"http/1.0") or b"connection: close" in lower or b"content-length:" not in lower
        if closes:
            sock.close()  # the server closes this connection: the next request goes on the spare
            sock = None
    wall = time.perf_counter() - t0
    for left in (sock, spare):
        if left is not None:
            left.close()
    return wall


PYTEST_ENV = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # a clean pytest: no installed plugin loaded
NO_TESTS = 5  # pytest's exit status when it collected nothing


def pytest_run(suite: Suite, base: str, tmp: Path, session: bool, empty: bool = False) -> float:
    """Wall seconds of pytest on the suite written out (`empty`: the same module without its tests)."""
    path = tmp / f"test_turn_{suite.turn}_{int(session)}{'_empty' if empty else ''}.py"
    path.write_text(PRELUDE.format(base=base, session=session) if empty else to_pytest(suite, base, session))
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp,
        env=PYTEST_ENV,
    )
    wall = time.perf_counter() - t0
    assert done.returncode == (NO_TESTS if empty else 0), done.stdout[-2000:] + done.stderr[-2000:]
    return wall


Measured = tuple[float, int, list[float]] | None  # (median wall, runs, each run's wall), or None: skipped


VARIANTS = ("floor", "ours", "ours-noqa", "pytest+session", "pytest+requests", "pytest-start")
QUICK = 0.5  # seconds: a variant whose median run is shorter is repeated QUICK_FACTOR times as often
QUICK_FACTOR = 5


def measure_all(
    runs: dict[str, Callable[[], float]], n: int, repeats: int, cap: float, budget: Budget, quick_factor: int
) -> dict[str, Measured]:
    """Median wall per variant; repeats go round-robin over the variants so each sees the same machine load.

    A variant whose first run took longer than `cap` seconds is not repeated; one the budget rules out is skipped;
    one whose median is under QUICK seconds runs QUICK_FACTOR times as often.
    """
    walls: dict[str, list[float]] = {}
    for name, run in runs.items():
        if budget.allows(name, n):
            walls[name] = [run()]
            budget.record(name, n, walls[name][0])
    for _ in range(repeats - 1):
        for name, run in runs.items():
            if name in walls and walls[name][0] <= cap:
                walls[name].append(run())
    quick = [name for name in walls if statistics.median(walls[name]) < QUICK]
    for _ in range(repeats * (quick_factor - 1)):  # still round-robin, over the quick ones
        for name in quick:
            walls[name].append(runs[name]())
    return {
        name: (statistics.median(walls[name]), len(walls[name]), walls[name]) if name in walls else None
        for name in runs
    }


def paired(a: Measured, b: Measured) -> str:
    """The median of a/b over the rounds both ran in (each pair back to back, so a drift in the machine's speed
    between rounds cancels out), or "-". Those are the first rounds of each: a variant runs in every round until
    the cap or the quick factor drops it from later ones (`measure_all`)."""
    if a is None or b is None:
        return "-"
    return f"{statistics.median(x / y for x, y in zip(a[2], b[2], strict=False)):.2f}x"


class Budget:
    """Skips a variant whose wall, scaled from its last measured turn by request count, would pass `seconds`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.rate: dict[str, float] = {}  # variant -> seconds per request at its last measured turn
        self.server = ""

    def allows(self, variant: str, n: int) -> bool:
        key = f"{self.server}/{variant}"
        return key not in self.rate or self.rate[key] * n <= self.seconds

    def record(self, variant: str, n: int, wall: float) -> None:
        self.rate[f"{self.server}/{variant}"] = wall / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--turns", default="0,50,100")
    ap.add_argument("--stacks", default=",".join(zoo.STACKS))
    ap.add_argument("--cap", type=float, default=20.0, help="seconds; a slower variant runs once")
    ap.add_argument(
        "--budget",
        type=float,
        default=600.0,
        help="seconds; a variant whose run would take longer (scaled from its last turn) is skipped",
    )
    ap.add_argument("--max-tests", type=int, default=0, help="only the suite's first N tests (0: all)")
    ap.add_argument("--smoke", action="store_true", help="20 tests of turn 0 on stdlib-http11, each variant once")
    ap.add_argument("--pin", type=int, help="run this script and every zoo server on this one CPU")
    ap.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help="the columns to measure (default: all); `floor,ours` gives ours/floor in minutes, not an hour",
    )
    args = ap.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    if unknown := set(variants) - set(VARIANTS):
        sys.exit(f"bench_suite: no variant {', '.join(sorted(unknown))} (there are {', '.join(VARIANTS)})")
    quick_factor = QUICK_FACTOR
    if args.smoke:
        args.turns, args.stacks, args.repeats, args.max_tests, quick_factor = "0", "stdlib-http11", 1, 20, 1
    if args.pin is not None:
        if args.pin not in os.sched_getaffinity(0):
            sys.exit(f"bench_suite: --pin {args.pin}: not one of this process's CPUs {sorted(os.sched_getaffinity(0))}")
        os.sched_setaffinity(0, {args.pin})  # the zoo servers, started later, inherit it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so an interrupted run still stops its zoo server
    budget = Budget(args.budget)
    turns = [int(t) for t in args.turns.split(",")]
    stacks = [s for s in args.stacks.split(",") if s]
    for stack in stacks:
        if zoo.missing(stack):
            sys.exit(f"bench_suite: {stack} needs {', '.join(zoo.missing(stack))}: pip install -e .[zoo]")
    scenario = generate(args.seed, ScenarioParams(turns=max(turns)))
    print(
        f"seed {args.seed}; median of {args.repeats} runs (xN: runs, where fewer); wall in s, req/s; "
        "floor = the same requests replayed by a minimal blocking client"
        + (f"; client and servers on CPU {args.pin}" if args.pin is not None else "")
    )
    print(
        f"{'server':18} {'turn':>4} {'tests':>5} {'reqs':>5} | {'floor':>12} | {'ours':>17} | "
        f"{'ours-noqa':>18} | {'pytest+session':>19} | {'pytest+requests':>17} | {'pytest-start':>12} | "
        "ours/floor  paired  session/ours  net/ours  session/floor"
    )
    # One event loop for every run of ours, as the daemon has one: a loop's first hand-off to a thread costs ~8 ms
    # (its thread machinery made), which a fresh `asyncio.run` per run would add to every run's wall.
    with tempfile.TemporaryDirectory() as tmp_s, asyncio.Runner() as loop:
        tmp = Path(tmp_s)
        for turn in turns:
            state, history = state_and_history(scenario, turn)
            suite = generate_suite(state, args.seed, turn, history)
            if args.max_tests:
                suite = msgspec.structs.replace(suite, tests=suite.tests[: args.max_tests])
            for stack in stacks:
                with zoo.running(stack, msgspec.to_builtins(state)) as base:
                    sent: list[Request] = []
                    loop.run(ours(suite, base, True, sent))  # warm-up, and the requests the floor replays
                    n = len(sent)
                    runs: dict[str, Callable[[], float]] = {
                        "floor": lambda: floor(base, sent),  # noqa: B023
                        "ours": lambda: loop.run(ours(suite, base, True))[0],  # noqa: B023
                        "ours-noqa": lambda: loop.run(ours(suite, base, False))[0],  # noqa: B023
                        "pytest+session": lambda: pytest_run(suite, base, tmp, True),  # noqa: B023
                        "pytest+requests": lambda: pytest_run(suite, base, tmp, False),  # noqa: B023
                        "pytest-start": lambda: pytest_run(suite, base, tmp, True, empty=True),  # noqa: B023
                    }
                    budget.server = stack
                    chosen = {k: run for k, run in runs.items() if k in variants}
                    got = measure_all(chosen, n, args.repeats, args.cap, budget, quick_factor)
                    got |= {k: None for k in runs if k not in chosen}

                def cell(m: Measured, width: int, n: int = n) -> str:
                    if m is None:
                        return "-".rjust(width)  # over the budget, or left out by --variants
                    runs = "" if m[1] == args.repeats else f" x{m[1]}"
                    return f"{m[0]:7.2f} {n / m[0]:6.0f}{runs}".rjust(width)

                def ratio(a: Measured, b: Measured, digits: int) -> str:
                    return "-" if a is None or b is None else f"{a[0] / b[0]:.{digits}f}x"

                fl, ok, nq, ps, pr, st = (got[k] for k in runs)
                net: Measured = None if ps is None or st is None else (ps[0] - st[0], ps[1], [])
                start = "-" if st is None else f"{st[0]:7.2f}"
                print(
                    f"{stack:18} {turn:4} {len(suite.tests):5} {n:5} | {cell(fl, 12)} | {cell(ok, 17)} | "
                    f"{cell(nq, 18)} | {cell(ps, 19)} | {cell(pr, 17)} | {start:>12} | {ratio(ok, fl, 2):>10}  "
                    f"{paired(ok, fl):>6}  "
                    f"{ratio(ps, ok, 1):>11}  {ratio(net, ok, 1):>8}  {ratio(ps, fl, 1):>13}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
