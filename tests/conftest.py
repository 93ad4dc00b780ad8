"""Shared pytest configuration: anyio runs on asyncio only (aiodocker, aiosqlite and Textual need it)."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
