"""Shared pytest configuration: anyio runs on asyncio only (aiodocker, aiosqlite and Textual need it)."""

import subprocess
from typing import Any

import pytest

_DOCKER_USED: list[bool] = []  # set once a test asks for the sandbox image


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    """The offline-built sandbox image (built here with mmdebstrap if this machine lacks it)."""
    from staminad.sandbox.image import build

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
