"""The daemon's own robustness: idle connections time out, open connections stay under the fd limit,
and generating a large sweep leaves the event loop serving."""

from __future__ import annotations

import contextlib
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import msgspec
import pytest

from protocol import PROTOCOL_VERSION, FrameReader, GetSweep, Hello, ListSweeps, SweepList, encoder
from protocol.client import Client
from protocol.stream import connect_unix
from tests.helpers.inprocess import request, running_daemon, submit
from tests.helpers.sweeps import write_sweep

pytestmark = pytest.mark.sweep

CLI = [sys.executable, "-m", "staminad.cli"]


def _hello() -> bytes:
    payload = encoder().encode(Hello(version=PROTOCOL_VERSION))
    return struct.pack(">I", len(payload)) + payload


def _reply(s: socket.socket) -> dict[str, object] | None:
    """The next frame on a raw connection as a dict, or None once the daemon closed it (bounded by the timeout)."""
    try:
        header = s.recv(4, socket.MSG_WAITALL)
        if len(header) < 4:
            return None
        body = s.recv(struct.unpack(">I", header)[0], socket.MSG_WAITALL)
    except ConnectionResetError:
        return None
    return dict(msgspec.msgpack.decode(body))


def test_many_idle_connections_under_a_low_fd_limit_never_stop_the_daemon(tmp_path: Path) -> None:
    """240 idle connections under a 256-fd limit are refused past the cap and never stop the daemon."""
    state = tmp_path / "st"

    def low_fd_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    proc = subprocess.Popen(
        [*CLI, "start", "--state-dir", str(state), "--runtime", "local"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=low_fd_limit,
    )
    held: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 30
        while not (state / "staminad.sock").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the daemon did not start"
            time.sleep(0.05)  # waiting for another process to bind its socket
        accepted, refused = 0, []
        for _ in range(240):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(30)
            s.connect(str(state / "staminad.sock"))
            with contextlib.suppress(BrokenPipeError):  # a refused one may be closed before the hello is sent
                s.sendall(_hello())
            reply = _reply(s)
            assert reply is not None, "a connection was closed without a word"
            if reply["type"] == "hello_reply":
                accepted += 1
                held.append(s)
            else:
                refused.append(str(reply["message"]))
                assert _reply(s) is None  # refused connections are closed at once
                s.close()
        assert accepted >= 4 and refused, (accepted, len(refused))
        assert all("limit of" in m and "connections" in m and "\n" not in m for m in refused)
        assert proc.poll() is None
        for s in held:  # the idle clients go away...
            s.close()
        held.clear()

        async def served() -> object:
            with anyio.fail_after(60):
                while True:  # ...and their slots come free as the daemon sees them close
                    with contextlib.suppress(Exception):
                        async with Client(state / "staminad.sock") as client:
                            return await client.request(ListSweeps())
                    await anyio.sleep(0.05)

        assert isinstance(anyio.run(served), SweepList)
        assert proc.poll() is None
    finally:
        for s in held:
            s.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.anyio
async def test_a_silent_connection_is_dropped_while_a_pinging_client_stays(tmp_path: Path) -> None:
    """A connection silent past the idle timeout is closed while a pinging client keeps its connection."""
    state = tmp_path / "st"
    # 3 s: a stall of the one process both sides share must not make the pinging client look silent too.
    async with running_daemon(state, idle_timeout=3.0), Client(state / "staminad.sock", keepalive=0.05) as patient:
        silent = await connect_unix(state / "staminad.sock")
        async with silent:
            await silent.send(_hello())
            frames = FrameReader(silent)
            with anyio.fail_after(30):
                hello = msgspec.msgpack.decode(await frames.read())
                assert hello["type"] == "hello_reply"
                with pytest.raises(anyio.IncompleteRead):  # the daemon closes it after 3 s of silence
                    await frames.read()
        assert isinstance(await patient.request(ListSweeps()), SweepList)


@pytest.mark.anyio
async def test_the_daemon_answers_while_a_large_sweep_is_being_generated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon answers status while a large sweep is generated (generation runs off the event loop)."""
    # In a thread here, with no worker processes to hold it in; in a worker process where the daemon has them.
    import staminad.engine.turns as engine_turns

    generating, answered = threading.Event(), threading.Event()
    order: list[str] = []
    from staminad.bench.scenario import generate as real

    def held_generate(seed: int, params: object) -> object:
        if not generating.is_set():
            order.append("generating")
            generating.set()
            answered.wait(30)  # bounded: if the loop is blocked, nothing answers and the order shows it
            order.append("generated")
        return real(seed, params)  # type: ignore[arg-type]

    monkeypatch.setattr(engine_turns, "generate", held_generate)
    path = write_sweep(tmp_path, "big", ["reference"], seeds="0-1", turns=1)
    state = tmp_path / "st"
    async with running_daemon(state, workers=0):
        await submit(state, path)
        assert await anyio.to_thread.run_sync(generating.wait, 30)
        info = await request(state, GetSweep(sweep="big"))
        order.append(f"status {info.status}")
        answered.set()
        with anyio.fail_after(120):
            while (await request(state, GetSweep(sweep="big"))).status == "running":  # noqa: ASYNC110
                await anyio.sleep(0.05)  # polling the daemon's own view of the sweep
    assert order == ["generating", "status running", "generated"]


def _cli(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args, "--state-dir", str(state)], capture_output=True, text=True, timeout=120)


@pytest.mark.anyio
async def test_submit_refuses_a_missing_or_tampered_pack_in_one_line(tmp_path: Path) -> None:
    """`submit` refuses a missing or tampered pack with one line, like `run`; the daemon stores nothing."""
    from staminad.bench.pack import build_pack
    from staminad.bench.scenario import ScenarioParams
    from staminad.packio import write_pack

    pack = tmp_path / "pack"
    write_pack(pack, build_pack([0], ScenarioParams(turns=1)))
    victim = next(p for p in sorted(pack.rglob("*")) if p.is_file() and p.name != "manifest.json")
    victim.write_bytes(victim.read_bytes() + b"tampered")
    state = tmp_path / "st"
    cases = {"missing": tmp_path / "nowhere", "tampered": pack}
    async with running_daemon(state):
        for case, where in cases.items():
            path = tmp_path / f"{case}.toml"
            path.write_text(
                f'name = "{case}"\n[scenarios]\npack = "{where}"\n[matrix]\nagents = ["reference"]\n'
                '[run]\nruntime = "local"\n'
            )
            done = await anyio.to_thread.run_sync(lambda p=path: _cli(state, "submit", str(p)))  # type: ignore[misc]
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2 and len(lines) == 1, (case, done.stderr)
            assert f"{case}.toml" in lines[0] and "scenarios.pack" in lines[0]
        listed = await request(state, ListSweeps())
        assert isinstance(listed, SweepList) and listed.sweeps == ()
