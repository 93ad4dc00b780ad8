"""Suite wall time per turn against the reference server: our async runner vs a pytest + requests file.

The baseline is the paper's approach: the same tests written out as a pytest module that calls
`requests` for every request, run by pytest in a subprocess. Both talk to the same reference server
process over loopback. Reports the median of --repeats runs for turns 0, 50 and 100, the speed-up
ratio, tests per second and the runner's client CPU per request.

Run: python benchmarks/bench_suite.py [--seed 0] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import msgspec

from staminad.bench.scenario import ScenarioParams, generate
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.http11 import Http11Transport
from staminad.suite.model import Absent, Equals, IsInteger, ListIds, Suite
from staminad.suite.runner import MAX_RESPONSE_BYTES, TransportError, run_suite


class HttpxTransport:
    """For comparison only: HTTP to `base_url` through a shared httpx client, with a timeout and a response-size cap."""

    def __init__(self, client: httpx.AsyncClient, base_url: str, timeout: float = 5.0) -> None:
        self.client = client
        self.base = base_url.rstrip("/")
        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 2.0))

    async def request(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        headers = {"content-type": "application/json"} if body is not None else {}
        try:
            async with self.client.stream(method, self.base + path, content=body, headers=headers,
                                          timeout=self.timeout, follow_redirects=False) as resp:
                chunks, size = [], 0
                async for chunk in resp.aiter_bytes():
                    size += len(chunk)
                    if size > MAX_RESPONSE_BYTES:
                        raise TransportError(f"response larger than {MAX_RESPONSE_BYTES} bytes")
                    chunks.append(chunk)
                return resp.status_code, b"".join(chunks)
        except httpx.ConnectError as exc:
            raise TransportError(f"connection failed: {exc}", refused=True) from None
        except httpx.TimeoutException:
            raise TransportError(f"no response within {self.timeout.read} s", timeout=True) from None
        except httpx.HTTPError as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from None



SERVER = Path(__file__).parents[1] / "staminad" / "reference" / "server.py"

PRELUDE = '''import json, math, requests
BASE = {base!r}
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
    r = requests.request(method, BASE + path, timeout=5, allow_redirects=False, **kw)
    assert r.status_code in expect, f"{{method}} {{path}} returned {{r.status_code}}"
    return r
'''


def to_pytest(suite: Suite, base: str) -> str:
    out = [PRELUDE.format(base=base)]
    for test in suite.tests:
        out.append(f"def test_{test.name}():")
        out.append("    call('POST', '/reset', ..., (200, 204))")
        for step in test.steps:
            body = repr(step.body) if step.has_body else "..."
            body = body.replace("None", "None").replace("true", "True")
            out.append(f"    r = call({step.method!r}, {step.path!r}, {body}, {tuple(step.expect)!r})")
            for check in step.checks:
                if isinstance(check, Equals):
                    out.append(f"    assert same(r.json()[{check.path[0]!r}], {check.value!r})")
                elif isinstance(check, Absent):
                    out.append(f"    assert {check.key!r} not in r.json()")
                elif isinstance(check, IsInteger):
                    out.append(f"    assert type(r.json()[{check.path[0]!r}]) is int")
                elif isinstance(check, ListIds):
                    out.append(f"    assert sorted(o['id'] for o in r.json()) == {sorted(check.ids)!r}")
        out.append("")
    return "\n".join(out)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(schema: object, tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    config = tmp / "config.json"
    config.write_text(json.dumps({"schema": schema}))
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), "--config", str(config), "--port", str(port),
                             "--host", "127.0.0.1"], start_new_session=True)
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.02)
    return proc, f"http://127.0.0.1:{port}"


async def ours(suite: Suite, base: str, client_kind: str) -> tuple[float, float, int]:
    async with httpx.AsyncClient() as client, Http11Transport.for_url(base) as fast:
        transport = fast if client_kind == "http11" else HttpxTransport(client, base)
        cpu0, t0 = time.process_time(), time.perf_counter()
        result = await run_suite(suite, transport)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    assert result.passed, result.failures[:2]
    return wall, cpu, result.requests


def baseline(suite: Suite, base: str, tmp: Path) -> float:
    path = tmp / f"test_turn_{suite.turn}.py"
    path.write_text(to_pytest(suite, base))
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", str(path)],
                          capture_output=True, text=True, cwd=tmp)
    wall = time.perf_counter() - t0
    assert done.returncode == 0, done.stdout[-2000:]
    return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--turns", default="0,50,100")
    args = ap.parse_args()
    turns = [int(t) for t in args.turns.split(",")]
    scenario = generate(args.seed, ScenarioParams(turns=max(turns)))
    print(f"seed {args.seed}, median of {args.repeats} runs each; baseline = pytest + requests (paper's approach)")
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        for turn in turns:
            state, history = state_and_history(scenario, turn)
            suite = generate_suite(state, args.seed, turn, history)
            proc, base = start_server(msgspec.to_builtins(state), tmp)
            try:
                runs = [asyncio.run(ours(suite, base, "http11")) for _ in range(args.repeats)]
                hx = [asyncio.run(ours(suite, base, "httpx")) for _ in range(args.repeats)]
                base_walls = [baseline(suite, base, tmp) for _ in range(args.repeats)]
            finally:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            requests_n = runs[0][2]
            bwall = statistics.median(base_walls)
            hxwall = statistics.median(r[0] for r in hx)
            hxcpu = statistics.median(r[1] for r in hx)
            print(f"turn {turn:3}: {len(suite.tests):5} tests, {requests_n:5} requests | ours {wall:6.2f} s "
                  f"({len(suite.tests) / wall:6.0f} tests/s, client CPU {cpu / requests_n * 1e6:5.0f} us/request) | "
                  f"pytest+requests {bwall:6.2f} s | speed-up {bwall / wall:4.1f}x")
            print(f"          same runner over httpx: {hxwall:6.2f} s, client CPU {hxcpu / requests_n * 1e6:5.0f} "
                  f"us/request, speed-up {bwall / hxwall:4.1f}x")


if __name__ == "__main__":
    main()
