"""The lean Docker path on a real container: the launcher holds none of its exec's streams, the suite reaches the
server at the container's own address on the project's network, and a server stop ends the agent's processes in
the same launcher operation, a server that ignores TERM included."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import aiodocker
import httpx
import pytest

from staminad.engine.config import RunSettings
from staminad.sandbox.base import SERVER_PORT_IN_CONTAINER, Grant, SandboxError
from staminad.sandbox.bounded import read_int
from staminad.sandbox.docker.bindsandbox import NETWORK, DockerSandbox, reap
from staminad.sandbox.ports import PortAllocator

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


@pytest.fixture
async def box(tmp_path: Path, sandbox_image: str) -> AsyncIterator[DockerSandbox]:
    """A prepared, sealed sandbox container (removed after the test)."""
    async with aiodocker.Docker() as docker:
        sandbox = DockerSandbox(
            docker,
            tmp_path / "sandboxes" / "path" / "c1-s0",
            "path",
            "x",
            RunSettings(image=sandbox_image),
            PortAllocator(),
        )
        try:
            await sandbox.prepare()
            yield sandbox
        finally:
            await reap(docker, sandbox.root.parent)


async def test_the_launcher_holds_none_of_the_streams_of_the_exec_that_started_it(box: DockerSandbox) -> None:
    """The launcher's standard streams are /dev/null (holding the exec's kept the next `docker exec` waiting)."""
    pid = read_int(box.host_control / "launcher.pid")
    assert pid is not None and box.channel.reading()
    code, out = await box._run(["readlink", f"/proc/{pid}/fd/0", f"/proc/{pid}/fd/1", f"/proc/{pid}/fd/2"])
    assert code == 0 and out.decode().split() == ["/dev/null"] * 3


async def test_the_suite_reaches_the_server_at_the_containers_address(box: DockerSandbox) -> None:
    """On a host on the project's network the server's URL is the container's address there, and it answers."""
    (box.host_workspace / "run_server.sh").write_text('exec python3 -m http.server --bind 0.0.0.0 "$1"\n')
    container = await box.docker.containers.get(box.name)
    address = (await container.show())["NetworkSettings"]["Networks"][NETWORK]["IPAddress"]
    handle = await box.start_server(30)
    try:
        url = urlsplit(handle.url)
        assert (url.hostname, url.port) == (address, SERVER_PORT_IN_CONTAINER)
        async with httpx.AsyncClient() as client:
            assert (await client.get(handle.url + "/")).status_code == 200
    finally:
        await box.stop_server(handle)


async def test_a_server_stop_ends_what_the_agent_left_running(box: DockerSandbox) -> None:
    """Stopping the server ends what the agent detached from it, leaving nothing for `end_agent`."""
    (box.host_workspace / "run_server.sh").write_text(
        'setsid sleep 3600 &\nexec python3 -m http.server --bind 0.0.0.0 "$1"\n'
    )
    handle = await box.start_server(30)
    await box.stop_server(handle)
    assert await box._server_pgid() is None
    assert await box.end_agent() == 0


async def test_a_seal_that_fails_is_raised_as_itself_and_leaves_no_helper(tmp_path: Path, sandbox_image: str) -> None:
    """A failing seal is one SandboxError, not an exception group, and its helper container is gone."""
    async with aiodocker.Docker() as docker:
        box = DockerSandbox(
            docker,
            tmp_path / "sandboxes" / "badseal" / "c1-s0",
            "badseal",
            "x",
            RunSettings(image=sandbox_image),
            PortAllocator(),
            grant=Grant(llm=True),
            llm=("300.0.0.1", 80),
        )
        try:
            with pytest.raises(SandboxError, match="cannot seal the network"):
                await box.prepare()
            left = await docker.containers.list(all=True, filters={"name": [f"{box.name}-seal"]})
            assert left == []
        finally:
            await reap(docker, box.root.parent)


async def test_a_server_that_ignores_term_is_killed_after_its_grace(box: DockerSandbox) -> None:
    """A server group ignoring TERM is killed after its grace, leaving the port and the agent clear."""
    (box.host_workspace / "run_server.sh").write_text(
        "trap '' TERM\n"
        "python3 -c 'import signal, http.server as h; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        'h.HTTPServer(("0.0.0.0", int(__import__("sys").argv[1])), h.BaseHTTPRequestHandler).serve_forever()\' "$1"\n'
    )
    handle = await box.start_server(30)
    await box.stop_server(handle)
    assert await box._server_pgid() is None
    assert await box.end_agent() == 0
    _, out = await box._run(["sh", "-c", f"grep -ic ':{SERVER_PORT_IN_CONTAINER:04X} .* 0A ' /proc/net/tcp || true"])
    assert out.decode().strip() == "0"
