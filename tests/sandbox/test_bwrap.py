"""The `bwrap` runtime isolates: its agent cannot write the runtime's files, see or signal the host's processes,
read another sandbox's workspace or the daemon's files, and nothing it leaves running outlives its phase."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import anyio
import pytest

from staminad.agents.base import adapter_for
from staminad.sandbox.base import Grant, Sandbox, SandboxError
from staminad.sandbox.bwrap import enclosure
from staminad.sandbox.bwrap.box import BwrapFactory
from staminad.sandbox.bwrap.probe import bwrap_problem
from staminad.sandbox.markers import MarkerWatcher
from staminad.sandbox.ports import PortAllocator

pytestmark = pytest.mark.anyio


async def _sandbox(root: Path, low: int = 31540) -> Sandbox:
    ports = PortAllocator(low, low + 4, lock_dir=root.parent / "locks")
    sb = BwrapFactory(ports)(root, "isolation", Grant(layer=adapter_for("reference").layer()))
    await sb.prepare()
    return sb


def _running() -> list[int]:
    """The host's processes that still run (a zombie, its exit not yet collected by its parent, runs nothing)."""
    pids = []
    for name in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{name}/stat").read_text() if name.isdigit() else ""
        except OSError:
            continue  # gone meanwhile
        if stat and stat[stat.rindex(")") + 2] != "Z":
            pids.append(int(name))
    return pids


async def _run(sb: Sandbox, script: str, watcher: MarkerWatcher) -> str:
    """What `script` printed as the agent's job (its log), once its marker is there."""
    await sb.launch("j1", ["sh", "-c", script], {})
    assert await sb.wait_marker("j1", 30, watcher) is not None
    host = sb.host_files
    assert host is not None
    return (host.control / "jobs" / "j1" / "log").read_text()


async def test_a_missing_bwrap_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without bubblewrap on PATH the probe says so in one line, naming the package."""
    monkeypatch.setenv("PATH", str(tmp_path))
    assert await bwrap_problem() == "bubblewrap is not installed (`apt-get install bubblewrap`)"


@pytest.mark.bwrap
async def test_the_probe_passes_where_namespaces_work() -> None:
    """On a machine with bubblewrap and user namespaces the runtime can run."""
    assert await bwrap_problem() is None


@pytest.mark.bwrap
async def test_the_agent_cannot_write_the_runtimes_files_or_read_its_control(
    tmp_path: Path, watcher: MarkerWatcher
) -> None:
    """The agent layer and the prompts are read-only, the control files are not there, the system is read-only."""
    sb = await _sandbox(tmp_path / "box")
    script = (
        "echo x > /harness/reference/agent.py || echo layer-refused; "
        "echo x > /stamina/prompts/p.md || echo prompts-refused; "
        "ls /stamina; test -e /stamina/jobs || echo no-jobs; touch /usr/x || echo usr-refused; "
        "test -e /etc/shadow || echo no-shadow; id -u"
    )
    out = await _run(sb, script, watcher)
    for said in ("layer-refused", "prompts-refused", "no-jobs", "usr-refused", "no-shadow"):
        assert said in out.split(), out
    assert out.split()[-1] == "1000" and "prompts" in out.split()
    host = sb.host_files
    assert host is not None and not (host.control / "prompts" / "p.md").exists()
    assert (tmp_path / "box" / "layer" / "reference" / "agent.py").read_text().startswith('"""')
    await sb.close()


@pytest.mark.bwrap
async def test_the_agent_cannot_see_or_signal_a_host_process(tmp_path: Path, watcher: MarkerWatcher) -> None:
    """A host process is neither listed nor killable from inside, even by `kill -KILL -1`; it outlives the job."""
    bystander = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        sb = await _sandbox(tmp_path / "box")
        pid = bystander.pid
        out = await _run(
            sb, f"kill -KILL {pid} || echo refused; test -e /proc/{pid} || echo unseen; kill -KILL -1", watcher
        )
        assert "refused" in out and "unseen" in out, out
        assert bystander.poll() is None
        assert await sb.health(0.0) is None
        await sb.close()
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.bwrap
async def test_the_agent_cannot_read_another_sandboxs_workspace(tmp_path: Path, watcher: MarkerWatcher) -> None:
    """Another sandbox's workspace and the daemon's directory are not in the agent's file system at all."""
    other = await _sandbox(tmp_path / "other", 31545)
    await other.seed({"secret.txt": "the other agent's code\n"})
    sb = await _sandbox(tmp_path / "box")
    secret = tmp_path / "other" / "workspace" / "secret.txt"
    out = await _run(sb, f"cat {secret} || echo unreadable; test -e {tmp_path} || echo no-daemon-dir; ls /", watcher)
    assert "unreadable" in out and "no-daemon-dir" in out and "the other agent" not in out, out
    assert "workspace" in out.split() and "tmp" in out.split() and "root" not in out.split()
    await sb.close()
    await other.close()


@pytest.mark.bwrap
async def test_what_the_harness_leaves_running_ends_before_the_server_starts(
    tmp_path: Path, watcher: MarkerWatcher
) -> None:
    """A process the harness detached (a new session) is gone, with its whole pid namespace, by the server's start."""
    sb = await _sandbox(tmp_path / "box")
    await sb.seed({"run_server.sh": 'exec python3 -m http.server --bind 127.0.0.1 "$1"\n'})
    host = sb.host_files
    assert host is not None
    os.mkfifo(host.workspace / "ready")
    await sb.launch("j1", ["sh", "-c", "setsid sh -c 'echo up > ready; exec sleep 600' & exec sleep 600"], {})
    with anyio.fail_after(30):
        assert await anyio.to_thread.run_sync((host.workspace / "ready").read_text) == "up\n"
    found = enclosure.read_record(host.control / "jobs" / "j1" / "box.json")
    assert found is not None
    await sb.kill_job("j1")  # the harness is stopped; its detached child would go on
    handle = await sb.start_server(timeout=30)
    assert [pid for pid in _running() if enclosure.namespace(pid) == found[1]] == []
    await sb.stop_server(handle)
    await sb.close()


@pytest.mark.bwrap
async def test_an_enclosure_that_cannot_be_set_up_is_the_platforms_failure(tmp_path: Path) -> None:
    """The server's enclosure failing before any agent code ran (its layer gone) is an engine_error, not NotReady."""
    sb = await _sandbox(tmp_path / "box")
    await sb.seed({"run_server.sh": 'exec python3 -m http.server --bind 127.0.0.1 "$1"\n'})
    shutil.rmtree(tmp_path / "box" / "layer")
    with pytest.raises(SandboxError) as info:
        await sb.start_server(timeout=30)
    assert info.value.kind == "engine_error" and "before any code of the agent's ran" in str(info.value)
    loss = await sb.health(0.0)
    assert loss is not None and loss.kind == "sandbox_lost"
    await sb.close()


SHARED = """import socket, sys
port = int(sys.argv[1])
open("port", "w").write(f"{port}\\n")  # a FIFO: the test takes its own listener on the port now
open("go").read()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(("127.0.0.1", port))
s.listen()
while True:
    c, _ = s.accept()
    c.recv(4096)
    c.sendall(b"HTTP/1.1 200 OK\\r\\ncontent-length: 0\\r\\nconnection: close\\r\\n\\r\\n")
    c.close()
"""


def _share(workspace: Path) -> socket.socket:
    """A listener of this (host) process on the port the sandbox's server says it got, then the server's go."""
    port = int((workspace / "port").read_text())
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("127.0.0.1", port))
    s.listen()
    (workspace / "go").write_text("go\n")
    return s


@pytest.mark.bwrap
async def test_a_port_shared_with_a_program_outside_the_enclosure_is_not_tested(tmp_path: Path) -> None:
    """A host process listening on the server's port too makes the start port_taken (judged by pid namespace)."""
    sb = await _sandbox(tmp_path / "box")
    await sb.seed({"run_server.sh": 'exec python3 shared.py "$1"\n', "shared.py": SHARED})
    host = sb.host_files
    assert host is not None
    os.mkfifo(host.workspace / "port")
    os.mkfifo(host.workspace / "go")
    async with anyio.create_task_group() as tg:
        outside: list[socket.socket] = []

        async def share() -> None:
            outside.append(await anyio.to_thread.run_sync(_share, host.workspace))

        tg.start_soon(share)
        with pytest.raises(SandboxError) as info:
            await sb.start_server(timeout=30)
    assert info.value.kind == "port_taken" and f"process {os.getpid()} outside this sandbox" in str(info.value)
    outside[0].close()
    await sb.close()


@pytest.mark.bwrap
async def test_a_server_detached_inside_its_enclosure_is_served_and_ends_with_it(tmp_path: Path) -> None:
    """A listener run_server.sh detached (setsid) is still in the enclosure: it is tested, and gone after the stop."""
    sb = await _sandbox(tmp_path / "box")
    detached = 'setsid python3 -m http.server --bind 127.0.0.1 "$1" & exec sleep 600\n'
    await sb.seed({"run_server.sh": detached})
    handle = await sb.start_server(timeout=30)
    found = enclosure.read_record(tmp_path / "box" / "control" / "server.box")
    assert found is not None
    await sb.stop_server(handle)
    assert [pid for pid in _running() if enclosure.namespace(pid) == found[1]] == []
    await sb.close()
