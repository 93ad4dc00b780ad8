"""Shared pytest configuration: anyio runs on asyncio only (aiodocker, aiosqlite and Textual need it), the Docker
fixtures, the tier checks of tests/helpers/tiers.py (a test needing Docker, a sweep or a daemon is marked so) and
the xdist groups of tests/helpers/parallel.py and the fast tier's CPU budget (tests/helpers/cpubudget.py)."""

import subprocess
from typing import Any

import pytest

from tests.helpers import cpubudget, parallel, tiers

_DOCKER_USED: list[bool] = []  # set once a test asks for the sandbox image


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Stop before running anything if a test uses a fixture of tiers.FIXTURES without its marker (before `-m`
    deselects, so the fast tier checks every test it leaves out too); then give each its xdist group."""
    wrong = [f"{item.nodeid}: mark it {', '.join(m)}" for item in items if (m := tiers.missing_markers(item))]
    if wrong:
        raise pytest.UsageError("tests using a fixture that needs a marker lack it:\n" + "\n".join(wrong))
    parallel.assign_groups(config, items)


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--cpu-budget` and `cpu_budget` (tests/helpers/cpubudget.py)."""
    cpubudget.add_options(parser)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """Fail a test without a tier marker whose call spent more CPU than the fast tier's budget."""
    return (yield from cpubudget.check(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Any:
    """Make `item` the running test for tiers.needs() during its setup, call and teardown."""
    tiers.RUNNING.append(item)
    try:
        return (yield)
    finally:
        tiers.RUNNING.pop()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    """The offline-built sandbox image (built here with mmdebstrap if this machine lacks it)."""
    from staminad.sandbox.docker.image import build

    _DOCKER_USED.append(True)
    tag, _ = build()
    return tag


@pytest.fixture(autouse=True, scope="session")
def no_leftover_containers(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """After the tests, none of their containers may remain (others' sweeps on this engine are not ours).

    Checked only when a test used the sandbox image (every Docker test does): a run without Docker tests
    never calls `docker`, and the check fails rather than passing silently if `docker ps` itself fails.
    """
    yield
    if not _DOCKER_USED:
        return
    base = str(tmp_path_factory.getbasetemp().resolve())
    out = subprocess.run(
        [
            "docker",
            "ps",
            "-a",
            "--filter",
            "label=staminabench.sweep",
            "--format",
            '{{.Names}} {{.Label "staminabench.sandboxes"}}',
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, f"docker ps failed: {out.stderr.strip()}"
    left = [line for line in out.stdout.splitlines() if line.split(" ", 1)[-1].startswith(base)]
    assert left == [], f"containers left behind: {left}"


@pytest.fixture(scope="session")
def second_engine(sandbox_image: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A second Docker engine on tcp://127.0.0.1 holding the sandbox image; stopped and removed after the tests.

    Session-scoped so the tests pay its start (about 2 s) and the image load once. A test that stops it
    (`stop()`) starts it again with `start()` before it ends.
    """
    import anyio

    from staminad.sandbox.docker.engineconnect import Endpoint, local_socket
    from staminad.sandbox.docker.enginespec import EngineSpec
    from tests.helpers.dockerd import SecondEngine

    engine = SecondEngine()
    try:
        engine.start()

        async def load() -> None:
            local, other = Endpoint(EngineSpec(url=local_socket())), Endpoint(EngineSpec(url=engine.url))
            try:
                from staminad.sandbox.docker.distribute import distribute

                await distribute(local.client(), other.client(), sandbox_image, engine.url)
                await distribute(local.client(), other.client(), "staminabench/sandbox:latest", engine.url)
            finally:
                await local.aclose()
                await other.aclose()

        anyio.run(load)
        yield engine
    finally:
        engine.remove()
