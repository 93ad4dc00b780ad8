"""The README's promise about the agent's environment, kept in the sealed sandbox: each web stack it names is there,
installs offline, and a server written in it the way agents write them starts through run_server.sh and passes
turn 0; a server needing what is not there gets feedback saying so plainly."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiodocker
import msgspec
import pytest

from staminad.bench.environment import PYTHON_PACKAGES, WHEELHOUSE
from staminad.bench.scenario import ScenarioParams, generate
from staminad.engine.blame import server_feedback
from staminad.engine.config import RunSettings
from staminad.engine.suitephase import SERVER_LOG_TAIL
from staminad.sandbox.base import NotReady
from staminad.sandbox.docker.bindsandbox import DockerSandbox, reap
from staminad.sandbox.docker.container import agent_ids
from staminad.sandbox.docker.image import build
from staminad.sandbox.ports import PortAllocator
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.http11 import Http11Transport
from staminad.suite.runner import run_suite
from tests.helpers.stackservers import STACKS, write_workspace

pytestmark = [pytest.mark.anyio, pytest.mark.docker]
SEED = 7
START = 180  # seconds for run_server.sh: the FastAPI one makes a virtual environment and installs into it first


@pytest.fixture(scope="module")
def node_image(sandbox_image: str) -> str:
    """The `node` layer (Node.js and Debian's Express on the base recipe), built here if this machine lacks it."""
    tag, _ = build("node", latest=False)
    return tag


async def sealed(tmp_path: Path, image: str) -> AsyncIterator[DockerSandbox]:
    """A prepared, sealed sandbox container of `image` (removed afterwards)."""
    async with aiodocker.Docker() as docker:
        box = DockerSandbox(
            docker,
            tmp_path / "sandboxes" / "stacks" / "c1-s0",
            "stacks",
            "x",
            RunSettings(image=image),
            PortAllocator(),
        )
        try:
            await box.prepare()
            yield box
        finally:
            await reap(docker, box.root.parent)


@pytest.fixture
async def box(tmp_path: Path, sandbox_image: str) -> AsyncIterator[DockerSandbox]:
    """A sealed sandbox of the base image."""
    async for b in sealed(tmp_path, sandbox_image):
        yield b


@pytest.fixture
async def node_box(tmp_path: Path, node_image: str) -> AsyncIterator[DockerSandbox]:
    """A sealed sandbox of the node layer."""
    async for b in sealed(tmp_path, node_image):
        yield b


async def passes_turn_0(box: DockerSandbox, stack: str) -> None:
    """Write the stack's workspace, start it through run_server.sh and run turn 0's whole suite against it."""
    state, history = state_and_history(generate(SEED, ScenarioParams(turns=1)), 0)
    write_workspace(box.host_workspace, stack, msgspec.to_builtins(state), agent_ids())
    try:
        handle = await box.start_server(START)
    except NotReady as exc:
        raise AssertionError(f"{stack}: {exc}\n{await box.server_log(SERVER_LOG_TAIL)}") from None
    try:
        suite = generate_suite(state, SEED, 0, history)
        async with Http11Transport.for_url(handle.url, timeout=10.0) as transport:
            result = await run_suite(suite, transport)
    finally:
        await box.stop_server(handle)
    assert result.passed, (stack, [f.message for f in result.failures[:3]])
    assert not result.server_died and result.requests > len(suite.tests) > 50


@pytest.mark.timeout(900)
@pytest.mark.parametrize("stack", [s for s in STACKS if s != "express"])
async def test_a_server_in_each_python_stack_passes_turn_0_in_the_sealed_sandbox(
    box: DockerSandbox, stack: str
) -> None:
    """Flask (pip install), FastAPI (a venv installing offline), Starlette (uvicorn), aiohttp, Django: turn 0 passes."""
    await passes_turn_0(box, stack)


@pytest.mark.timeout(1800)
async def test_an_express_server_passes_turn_0_in_the_node_layer(node_box: DockerSandbox) -> None:
    """`require('express')` works without npm install in the node layer, and an Express server passes turn 0."""
    await passes_turn_0(node_box, "express")


async def test_every_package_the_readme_names_imports_and_pip_installs_offline(box: DockerSandbox) -> None:
    """As the agent: each named package imports in python3; pip (system and venv) finds them only in the wheelhouse."""
    names = " ".join(name for name, _, _ in PYTHON_PACKAGES)
    (box.host_workspace / "run_server.sh").write_text(
        "set -x\ncd /tmp\n"
        "python - <<'EOF'\nimport aiohttp, django, fastapi, flask, flask_cors, gunicorn, httpx, pydantic, pytest\n"
        "import requests, rest_framework, sqlalchemy, starlette, uvicorn, uvloop\nprint('IMPORTS OK')\nEOF\n"
        f"pip install {names} && echo SYSTEM PIP OK\n"
        "python3 -m venv /workspace/venv && /workspace/venv/bin/pip install -q flask==3.1.3 && "
        "/workspace/venv/bin/python -c 'import flask; print(\"VENV OK\", flask.__file__)'\n"
        "pip download --no-deps -d /tmp/x tornado || echo NO INDEX\n"
        f"touch {WHEELHOUSE}/x || echo WHEELHOUSE READ-ONLY\n"
        'exec python3 -m http.server --bind 0.0.0.0 "$1"\n'
    )
    handle = await box.start_server(2 * START)  # fourteen packages resolved, a venv made: minutes on a busy box
    await box.stop_server(handle)
    log = await box.server_log(64_000)
    for said in ("IMPORTS OK", "SYSTEM PIP OK", "VENV OK /workspace/venv/", "NO INDEX", "WHEELHOUSE READ-ONLY"):
        assert said in log, log


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ('echo "import tornado.web" > app.py\nexec python3 app.py "$1"\n', "The module `tornado` is not available"),
        (
            'echo "flask==2.0.0" > r.txt\npip install -r r.txt\nexec flask run -p "$1"\n',
            "pip cannot install `flask==2.0.0`",
        ),
        ('exec node server.js "$1"\n', "The command `node` is not installed in the sandbox"),
    ],
    ids=["module", "version", "command"],
)
async def test_a_server_needing_what_the_sandbox_lacks_is_told_so_plainly(
    box: DockerSandbox, script: str, said: str
) -> None:
    """The retry prompt for a server that died on a missing module, version or command names it and what there is."""
    (box.host_workspace / "run_server.sh").write_text("cd /workspace\n" + script)
    with pytest.raises(NotReady) as exc:
        await box.start_server(30)
    feedback = server_feedback(exc.value.kind, str(exc.value), await box.server_log(SERVER_LOG_TAIL), "medium")
    assert said in feedback and "no network" in feedback, feedback
