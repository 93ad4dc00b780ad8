"""A port taken by another program is the platform's fault, never the agent's (local runtime, real sockets).

The agent's server starts through a `python3` on PATH that first tells the test which port it was given and
waits for the go-ahead: between the allocation and the server's bind, the test (another program on the box)
takes that port the way the issue saw it happen: a listener, or an outgoing connection whose local port it is
(the kernel's ephemeral-port collision), open or closed and left in TIME_WAIT.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import anyio
import pytest
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from protocol.events import InfraFailure
from staminad.sandbox.base import NotReady
from staminad.sandbox.local import SERVER_TAG, LocalSandbox, local_factory
from staminad.sandbox.ports import PortAllocator
from state.store import Store
from tests.helpers.sweeps import Recorder, sweep, write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep, pytest.mark.docker]

SHIM = """#!{real}
import os, socket, sys
args = sys.argv[1:]
if args[:3] == ["-B", "-m", "refserver"]:  # the agent's server: say which port it got, start once the test says so
    with socket.create_connection(("127.0.0.1", {gate}), timeout=120) as gate:
        gate.sendall(args[args.index("--port") + 1].encode() + b"\\n")
        gate.recv(16)
os.execv({real!r}, [{real!r}, *args])
"""


def _take(port: int, how: str, held: list[socket.socket]) -> None:
    """Take `port` from outside the sandbox, as another program on the box would."""
    if how == "listener":
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
        held.append(s)
        return
    target = socket.create_server(("127.0.0.1", 0))
    client = socket.socket()
    client.bind(("127.0.0.1", port))  # what the kernel does for an outgoing connection given this ephemeral port
    client.connect(target.getsockname())
    accepted, _ = target.accept()
    held += [target, client, accepted]
    if how == "closed":  # the client closes first: its socket stays on the port, in TIME_WAIT, held by no process
        client.close()
        accepted.close()


@pytest.mark.parametrize(("how", "low"), [("listener", 31300), ("connection", 31310), ("closed", 31320)])
async def test_a_port_taken_before_the_server_binds_it_is_an_infra_retry_on_a_fresh_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, low: int
) -> None:
    """The reference agent's server finding its port taken from outside is `port_taken`: retried, R untouched."""
    real = shutil.which("python3")
    assert real is not None
    ports: list[int] = []
    held: list[socket.socket] = []

    async def gate(stream: SocketStream) -> None:
        async with stream:
            port = int(await BufferedByteReceiveStream(stream).receive_until(b"\n", 16))
            if not ports:
                _take(port, how, held)
            ports.append(port)
            await stream.send(b"go\n")

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    shim = tmp_path / "bin" / "python3"
    shim.parent.mkdir()
    shim.write_text(SHIM.format(real=real, gate=listener.extra(anyio.abc.SocketAttribute.local_port)))
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}:{os.environ['PATH']}")  # what a sandboxed process runs as python3
    path = write_sweep(tmp_path, f"taken-{how}", ["reference"], turns=0, retries=1)
    rec = Recorder()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, gate)
            allocator = PortAllocator(low, low + 4, lock_dir=tmp_path / "locks")
            res = await sweep(path, tmp_path / "state", factory=local_factory(allocator), recorder=rec)
            tg.cancel_scope.cancel()
    finally:
        for s in held:
            s.close()
    config = res["reference R=1 detailed"]
    assert config.statuses == {"done": 1} and config.infra == {"port_taken": 1}
    assert len(ports) == 2 and ports[1] != ports[0]  # the retry's server got a fresh port
    async with await Store.open(tmp_path / "state" / "staminad.db") as store:
        ((_, row),) = await store.scenarios(f"taken-{how}")
        attempts = await store.attempts(row.id)
    assert [(a.turn, a.attempt, a.infra_try, a.outcome, a.infra_kind) for a in attempts] == [
        (0, 1, 0, "infra", "port_taken"),
        (0, 1, 1, "pass", None),  # the same attempt again: no feedback retry of R was spent
    ]
    (failure,) = rec.kinds(InfraFailure)
    assert failure.infra_kind == "port_taken" and f"port {ports[0]} is held" in failure.detail
    assert allocator.held == set()


LEFTOVER = {
    # detached into a session of its own (the tag it inherited stays)
    "setsid": 'setsid python3 -c "$LISTEN" "$1" > "$fifo" &\n',
    # a process group of its own (job control) in the server's session, the tag stripped
    "group": f'set -m\nenv -u {SERVER_TAG} python3 -c "$LISTEN" "$1" > "$fifo" &\nset +m\n',
}


@pytest.mark.parametrize("how", ["setsid", "group"])
async def test_the_agents_own_leftover_on_the_port_stays_the_agents_failure(tmp_path: Path, how: str) -> None:
    """A server that cannot bind because the agent's own detached process holds the port is server_left_running."""
    box = LocalSandbox(tmp_path / "box", PortAllocator(31330, 31334, lock_dir=tmp_path / "locks"))
    await box.prepare()
    (box.host_workspace / "run_server.sh").write_text(
        "LISTEN='import socket, sys, time\n"
        's = socket.create_server(("0.0.0.0", int(sys.argv[1])))\n'
        'print("up", flush=True)\ntime.sleep(300)\'\n'
        'fifo="$PWD/.up" && rm -f "$fifo" && mkfifo "$fifo"\n'
        + LEFTOVER[how]
        + 'read -r up < "$fifo"\n'  # the leftover listens: now the real server cannot bind
        'exec python3 -c \'import socket, sys; socket.create_server(("0.0.0.0", int(sys.argv[1])))\' "$1"\n'
    )
    with pytest.raises(NotReady) as info:
        await box.start_server(timeout=20)
    assert info.value.kind == "server_left_running"
    assert "of this sandbox outside the process group" in str(info.value)
    assert box.ports.held == set()


async def test_a_published_port_taken_before_its_container_starts_is_port_taken(
    tmp_path: Path, sandbox_image: str
) -> None:
    """Docker: another program's connection on the published port makes the start `port_taken`; a fresh port then."""
    import aiodocker

    from staminad.engine.config import load_sweep
    from staminad.sandbox.base import SandboxError
    from staminad.sandbox.docker.bindsandbox import DockerSandbox

    path = write_sweep(tmp_path, "published", ["reference"], runtime="docker")
    path.write_text(path.read_text() + f'image = "{sandbox_image}"\n')
    sw, _ = load_sweep(path)
    held: list[socket.socket] = []
    async with aiodocker.Docker() as client:
        allocator = PortAllocator(31340, 31344, lock_dir=tmp_path / "locks")
        box = DockerSandbox(client, tmp_path / "published" / "c1-s0", "published", "x", sw.run, allocator)
        try:
            await box.prepare()
            port = box.port
            assert port is not None
            await (await client.containers.get(box.name)).stop()  # its published port is free until it starts again
            _take(port, "connection", held)
            with pytest.raises(SandboxError) as info:
                await box.prepare()
            assert info.value.kind == "port_taken" and port not in allocator.held
            await box.prepare()  # the retry: a new container on a fresh port
            assert box.port not in (None, port) and box.port in allocator.held
        finally:
            for s in held:
                s.close()
            await box.close()


async def test_a_found_container_takes_its_ports_lock_or_is_made_anew(tmp_path: Path, sandbox_image: str) -> None:
    """Docker: a container found on prepare locks its port again, or is made anew on a fresh one if that is held."""
    import aiodocker

    from staminad.engine.config import load_sweep
    from staminad.sandbox.docker.bindsandbox import DockerSandbox

    path = write_sweep(tmp_path, "adopted", ["reference"], runtime="docker")
    path.write_text(path.read_text() + f'image = "{sandbox_image}"\n')
    sw, _ = load_sweep(path)
    root, locks = tmp_path / "adopted" / "c1-s0", tmp_path / "locks"

    def sandbox(client: aiodocker.Docker, allocator: PortAllocator) -> DockerSandbox:
        return DockerSandbox(client, root, "adopted", "x", sw.run, allocator)

    async with aiodocker.Docker() as client:
        first = PortAllocator(31350, 31354, lock_dir=locks)
        box = sandbox(client, first)
        try:
            await box.prepare()
            port = box.port
            assert port is not None
            first.release(port)  # the daemon that made it is gone
            restarted = PortAllocator(31350, 31354, lock_dir=locks)
            box = sandbox(client, restarted)
            await box.prepare()
            assert box.port == port and port in restarted.held
            assert not PortAllocator(31350, 31354, lock_dir=locks).adopt(port)  # its lock is taken again
            other = PortAllocator(31350, 31354, lock_dir=locks)  # a process that finds it while `restarted` holds it
            box = sandbox(client, other)
            await box.prepare()
            assert box.port not in (None, port) and box.port in other.held and port not in other.held
            container = (await client.containers.get(box.name))._container
            published = container["HostConfig"]["PortBindings"]
            assert [b["HostPort"] for bs in published.values() for b in bs] == [str(box.port)]
        finally:
            await box.close()
