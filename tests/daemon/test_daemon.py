"""staminad as a service: single instance, protocol robustness, submit/status/pause/cancel, kill -9 resume."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import sqlite3
import struct
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from protocol import PROTOCOL_VERSION, Hello, ListSweeps, SweepInfo, SweepList, encoder
from protocol.client import Client
from protocol.messages import RequestFor
from tests.helpers.daemon import CLI, cli, daemon
from tests.helpers.daemon import start as _start
from tests.helpers.sweeps import sweep as run_in_process
from tests.helpers.sweeps import write_sweep

pytestmark = [pytest.mark.sweep, pytest.mark.docker]


async def _request(state: Path, message: RequestFor[Any]) -> Any:
    async with Client(state / "staminad.sock") as client:
        return await client.request(message)


def test_one_instance_per_state_dir_and_stale_files_are_handled(tmp_path: Path) -> None:
    """A stale socket and lock file do not stop a start; a second instance exits 2 with one line."""
    state = tmp_path / "st"
    state.mkdir()
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(state / "staminad.sock"))
    stale.close()
    (state / "staminad.lock").write_text("12345\n")
    with daemon(state):
        second = subprocess.run([*CLI, "start", "--state-dir", str(state)], capture_output=True, text=True, timeout=60)
        assert second.returncode == 1 and "another staminad already runs" in second.stderr
        assert len(second.stderr.strip().splitlines()) == 1
        assert oct(os.stat(state / "staminad.sock").st_mode & 0o777) == "0o600"
    assert not (state / "staminad.sock").exists()


def test_clients_say_clearly_when_no_daemon_runs(tmp_path: Path) -> None:
    """A client command with no daemon is a runtime error: exit 1 with one line telling how to start it."""
    done = cli(tmp_path, "status")
    assert done.returncode == 1 and "staminad is not running" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_status_while_a_staminad_run_holds_the_state_dir_says_so(tmp_path: Path) -> None:
    """With a `staminad run` holding the state dir, `status` exits 1 naming the run and its pid."""
    from state.lock import lock_state_dir

    state = tmp_path / "st"
    fd = lock_state_dir(state, "busy", "run")
    try:
        done = cli(state, "status")
    finally:
        os.close(fd)
    assert done.returncode == 1 and f"a `staminad run` (pid {os.getpid()}) holds {state}" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "staminad is not running" in cli(state, "status").stderr  # released: no holder named any more


def test_a_state_dir_too_long_for_a_socket_is_named_in_one_line(tmp_path: Path) -> None:
    """`start` and `status` on a state dir whose socket path passes the Unix limit exit 1 naming the state dir."""
    state = tmp_path / ("s" * 110)
    for args in (("start",), ("status",)):
        done = cli(state, *args)
        assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert f"state directory {state} is too long a path for its control socket" in done.stderr
        assert "--state-dir" in done.stderr


def test_a_metrics_port_in_use_refuses_the_start_naming_the_port(tmp_path: Path) -> None:
    """`start --metrics-port N` with N taken exits 1 in one line naming --metrics-port N, serving nothing."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = cli(tmp_path / "st", "start", "--metrics-port", str(port))
    assert done.returncode == 1 and f"--metrics-port {port}" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "st" / "staminad.sock").exists()


def test_a_daemon_that_cannot_answer_is_a_runtime_error_for_the_client(tmp_path: Path) -> None:
    """A request the daemon fails on (its store lost a table under it) exits 1, an unknown sweep still 2."""
    state = tmp_path / "st"
    with daemon(state):
        assert cli(state, "status", "nosuch").returncode == 2
        with contextlib.closing(sqlite3.connect(state / "staminad.db", timeout=30)) as db:
            db.execute("ALTER TABLE sweeps RENAME TO gone")
            db.commit()
        done = cli(state, "status")
        assert done.returncode == 1 and "could not answer ListSweeps" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def _raw(state: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(15)
    s.connect(str(state / "staminad.sock"))
    return s


def _frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def _read(s: socket.socket) -> Any:
    head = s.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        return None
    (n,) = struct.unpack(">I", head)
    return msgspec.msgpack.decode(s.recv(n, socket.MSG_WAITALL))


def test_garbage_oversized_and_wrongly_typed_input_never_hurts_the_daemon(tmp_path: Path) -> None:
    """Garbage, bad versions, wrong types, huge frames and stuck subscribers never stop the daemon answering."""
    enc = encoder()
    with daemon(tmp_path / "st") as proc:
        s = _raw(tmp_path / "st")
        s.sendall(_frame(b"\xc1\xc1 not msgpack"))
        assert _read(s) is None  # no hello: connection closed
        s = _raw(tmp_path / "st")
        s.sendall(_frame(enc.encode(Hello(version=PROTOCOL_VERSION + 7))))
        assert "protocol version" in str(_read(s))
        s = _raw(tmp_path / "st")
        s.sendall(_frame(enc.encode(Hello(version=PROTOCOL_VERSION))))
        assert _read(s)["type"] == "hello_reply"
        s.sendall(_frame(b"\x93\x01\x02"))  # valid msgpack, not a request
        assert _read(s)["type"] == "error"
        s.sendall(_frame(msgspec.msgpack.encode({"type": "submit", "sweep_toml": 12})))
        assert "Expected `str`" in str(_read(s))
        s.sendall(_frame(msgspec.msgpack.encode({"type": "get", "sweep": "x", "extra": 1})))
        assert _read(s)["type"] == "error"
        s.sendall(_frame(enc.encode(ListSweeps())))
        assert _read(s)["type"] == "sweeps"
        s.sendall(struct.pack(">I", 100 * 1024 * 1024))
        assert "exceeds the limit" in str(_read(s))
        lazy = _raw(tmp_path / "st")  # subscribes and never reads
        lazy.sendall(
            _frame(enc.encode(Hello(version=PROTOCOL_VERSION))) + _frame(msgspec.msgpack.encode({"type": "subscribe"}))
        )
        for _ in range(50):
            junk = _raw(tmp_path / "st")
            junk.sendall(os.urandom(64))
            junk.close()
        assert isinstance(anyio.run(_request, tmp_path / "st", ListSweeps()), SweepList)
        assert proc.poll() is None


def test_submit_pause_resume_cancel_and_status(tmp_path: Path) -> None:
    """A paused submission runs nothing until resumed; a running sweep pauses, resumes and cancels."""
    state = tmp_path / "st"
    path = write_sweep(tmp_path, "svc", ["reference", "mutant:accept-null"], seeds="0-1", turns=3)
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [")
    with daemon(state):
        assert cli(state, "submit", str(bad)).returncode == 2
        done = cli(state, "submit", "--paused", str(path))
        assert done.returncode == 0, done.stderr
        held = msgspec.json.decode(cli(state, "status", "svc", "--json").stdout)
        assert held["status"] == "paused"
        with contextlib.closing(sqlite3.connect(f"file:{state / 'staminad.db'}?mode=ro", uri=True)) as db:
            assert db.execute("SELECT COUNT(*) FROM attempts").fetchone() == (0,)  # nothing ran
        assert cli(state, "resume", "svc").returncode == 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            info = anyio.run(_request, state, ListSweeps())
            assert isinstance(info, SweepList)
            if info.sweeps and info.sweeps[0].status == "finished":
                break
            time.sleep(0.2)  # polling another process's progress
        final = anyio.run(_request, state, ListSweeps())
        assert isinstance(final, SweepList)
        by_name = {c.name: c for c in final.sweeps[0].configurations}
        assert by_name["reference R=2 detailed"].mean_turns == 4
        assert by_name["mutant:accept-null R=2 detailed"].statuses == {"failed": 2}
        long = write_sweep(tmp_path, "long", ["reference"], seeds="0-3", turns=50)
        assert cli(state, "submit", str(long)).returncode == 0
        assert cli(state, "pause", "long").returncode == 0  # 4 x 51 turns: far from done by now
        assert msgspec.json.decode(cli(state, "status", "long", "--json").stdout)["status"] == "paused"
        assert cli(state, "resume", "long").returncode == 0
        assert cli(state, "cancel", "long").returncode == 0
        status = cli(state, "status", "long", "--json")
        assert msgspec.json.decode(status.stdout)["status"] == "cancelled"


def _results(info: SweepInfo) -> dict[str, tuple[float, dict[str, int]]]:
    return {c.name: (c.mean_turns, c.statuses) for c in info.configurations}


def _kill_and_resume(
    tmp_path: Path, agents: list[str], seeds: str, turns: int, kills: int, runtime: str, extra: str = ""
) -> None:
    """Run a sweep under a daemon killed with SIGKILL `kills` times; compare with an in-process run."""
    path = write_sweep(tmp_path, "k9", agents, seeds=seeds, turns=turns)
    path.write_text(path.read_text() + extra)
    baseline = anyio.run(run_in_process, path, tmp_path / "base")
    state = tmp_path / "st"
    rng = random.Random(9)
    proc = _start(state, runtime)
    assert cli(state, "submit", str(path)).returncode == 0
    done = 0
    info = None
    try:
        for _ in range(kills):
            time.sleep(rng.uniform(0.3, 2.0))  # a random moment in the sweep, which runs in another process
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            done += 1
            proc = _start(state, runtime)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            info = anyio.run(_request, state, ListSweeps())
            assert isinstance(info, SweepList)
            if info.sweeps[0].status == "finished":
                break
            time.sleep(0.3)  # polling another process's progress
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    assert isinstance(info, SweepList) and info.sweeps[0].status == "finished" and done == kills
    assert _results(info.sweeps[0]) == {k: (v.mean_turns, v.statuses) for k, v in baseline.items()}
    import sqlite3

    db = sqlite3.connect(state / "staminad.db")
    dup = db.execute(
        "SELECT COUNT(*) FROM (SELECT scenario_id, turn, attempt, COUNT(*) c FROM attempts "
        "WHERE outcome IN ('pass', 'fail') GROUP BY scenario_id, turn, attempt HAVING c > 1)"
    ).fetchone()
    assert dup[0] == 0
    deadline = time.monotonic() + 10
    while _processes_under(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)  # a group just sent SIGKILL may take a moment to be reaped by init
    assert _processes_under(tmp_path) == []


def _processes_under(root: Path) -> list[str]:
    """Processes whose command line or working directory lies under `root` (servers run with cwd there)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(proc / "cwd")
            if str(root) in cmd or cwd.startswith(str(root)):
                found.append(f"{proc.name}: {cmd}")
    return found


def test_kill_minus_9_at_random_moments_resumes_to_identical_results(tmp_path: Path) -> None:
    """kill -9 of the daemon at random moments resumes to the uninterrupted results, nothing run twice or left."""
    agents = ["reference", "mutant:rounded-avg+fix", "mutant:no-cascade", "fault:crash:once"]
    _kill_and_resume(tmp_path, agents, "0-2", 6, 6, "local")


def test_kill_minus_9_resumes_in_docker(tmp_path: Path, sandbox_image: str) -> None:
    """The same in Docker containers: killed daemons leave containers running; restarts reuse them."""
    _kill_and_resume(
        tmp_path, ["reference", "mutant:no-cascade"], "0-1", 4, 3, "docker", f'image = "{sandbox_image}"\n'
    )


def test_scenario_timeline_and_attempt_texts_over_the_socket(tmp_path: Path) -> None:
    """A client can fetch a scenario's attempts and an attempt's prompt, feedback and failing tests."""
    from protocol import AttemptTexts, GetAttempt, GetScenario, ScenarioInfo

    state = tmp_path / "st"
    path = write_sweep(tmp_path, "tl", ["mutant:accept-null"], turns=1, retries=1)
    with daemon(state):
        assert cli(state, "submit", str(path)).returncode == 0
        deadline = time.monotonic() + 120
        info: object = None
        while time.monotonic() < deadline:
            info = anyio.run(
                _request, state, GetScenario(sweep="tl", configuration="mutant:accept-null R=1 detailed", seed=0)
            )
            if isinstance(info, ScenarioInfo) and info.status == "failed":
                break
            time.sleep(0.2)  # polling another process's progress
        assert isinstance(info, ScenarioInfo) and [a.attempt for a in info.attempts] == [1, 2]
        texts = anyio.run(_request, state, GetAttempt(attempt_id=info.attempts[1].id))
        assert isinstance(texts, AttemptTexts) and texts.prompt_kind == "feedback"
        assert texts.failures and "null" in {f.rule for f in texts.failures} and texts.feedback
        missing = anyio.run(_request, state, GetScenario(sweep="tl", configuration="nope", seed=0))
        assert "no scenario" in str(missing)


def test_missing_image_fails_the_sweep_not_the_daemon(tmp_path: Path) -> None:
    """A missing Docker image ends the sweep in error with a one-line reason in `status`; the daemon goes on."""
    state = tmp_path / "st"
    path = write_sweep(tmp_path, "noimg", ["reference"], runtime="docker")
    path.write_text(path.read_text() + 'image = "staminabench/sandbox:does-not-exist"\n')
    with daemon(state, runtime=None) as proc:
        # The failing sweep publishes one event; a replaying subscription sees it whether it registers
        # before the submit or after, so nothing waits for the other process.
        log = subprocess.Popen(
            [*CLI, "logs", "--state-dir", str(state), "--count", "1", "--json", "--replay", "5"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert cli(state, "submit", str(path)).returncode == 0
        out, _ = log.communicate(timeout=60)
        event = msgspec.json.decode(out.splitlines()[0])
        assert event["kind"] == "sweep_error" and "does-not-exist" in event["data"]["error"]
        status = msgspec.json.decode(cli(state, "status", "noimg", "--json").stdout)
        assert status["status"] == "error" and status["reason"] == event["data"]["error"]
        assert "\n" not in status["reason"] and "does-not-exist" in status["reason"]
        assert cli(state, "status", "noimg").stdout.splitlines()[0] == f"sweep noimg: error: {status['reason']}"
        assert proc.poll() is None


def test_stop_drain_lets_running_attempts_finish(tmp_path: Path) -> None:
    """`stop --drain` starts no new attempt and exits once running ones are recorded as tested."""
    state = tmp_path / "st"
    path = write_sweep(tmp_path, "drain", ["reference"], seeds="0-3", turns=20)
    with daemon(state) as proc:
        assert cli(state, "submit", str(path)).returncode == 0
        log = cli(state, "logs", "--count", "1", "--kinds", "attempt_started", "--replay", "1000")
        assert " drain: " in log.stdout and ": started" in log.stdout  # an attempt runs as the drain begins
        assert cli(state, "stop", "--drain").returncode == 0
        assert proc.wait(timeout=120) == 0
    import sqlite3

    db = sqlite3.connect(state / "staminad.db")
    unfinished = db.execute("SELECT COUNT(*) FROM attempts WHERE phase != 'tested'").fetchone()[0]
    tested = db.execute("SELECT COUNT(*) FROM attempts WHERE phase = 'tested'").fetchone()[0]
    assert unfinished == 0 and tested >= 1
    assert db.execute("SELECT status FROM sweeps").fetchone()[0] == "running"  # resumes on the next start
