"""Fixtures the sandbox tests share: the daemon's one marker watcher, serving while a test runs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from staminad.sandbox.markers import MarkerWatcher


@pytest.fixture
async def watcher() -> AsyncIterator[MarkerWatcher]:
    """The daemon's one marker watcher, serving while the test runs."""
    w = MarkerWatcher()
    async with anyio.create_task_group() as tg:
        tg.start_soon(w.serve)
        yield w
        tg.cancel_scope.cancel()
    w.close()
