"""Shared pytest configuration: anyio runs on asyncio only (aiodocker, aiosqlite and Textual need it)."""

import subprocess
from typing import Any

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    """The offline-built sandbox image (built here with mmdebstrap if this machine lacks it)."""
    from staminad.sandbox.image import build

    tag, _ = build()
    return tag


@pytest.fixture(autouse=True, scope="session")
def no_leftover_containers() -> Any:
    """After the engine tests, no labelled container may remain."""
    yield
    out = subprocess.run(["docker", "ps", "-aq", "--filter", "label=staminabench.sweep"], capture_output=True,
                         text=True)
    assert out.stdout.strip() == "", f"containers left behind: {out.stdout}"
