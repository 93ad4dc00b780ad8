"""A real staminad running inside the test's event loop, and helpers to drive it over its socket."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from protocol import Event, Ok, Submit, Subscribe
from protocol.client import Client
from staminad.daemon.service import Daemon
from tests.helpers.tiers import needs


@asynccontextmanager
async def running_daemon(state: Path, **options: Any) -> AsyncIterator[Daemon]:
    """Serve a daemon on `state` until the block ends; ready (socket bound) when the block starts."""
    needs("sweep", "runs a daemon")
    daemon = Daemon(state, runtime="local", **options)
    async with anyio.create_task_group() as tg:
        await tg.start(daemon.serve)
        try:
            yield daemon
        finally:
            daemon.stop()


async def request(state: Path, message: Any) -> Any:
    async with Client(state / "staminad.sock", name="test") as client:
        return await client.request(message)


async def submit(state: Path, sweep_file: Path) -> str:
    reply = await request(state, Submit(sweep_toml=sweep_file.read_text(), base_dir=str(sweep_file.parent)))
    assert isinstance(reply, Ok), reply
    return reply.detail


@asynccontextmanager
async def events(state: Path, sweeps: tuple[str, ...] = (), replay: int = 0) -> AsyncIterator[AsyncIterator[Event]]:
    """An event stream of the daemon, subscribed before the block starts (so nothing is missed)."""
    async with Client(state / "staminad.sock", name="test") as client:
        assert isinstance(await client.request(Subscribe(sweeps=sweeps, replay=replay)), Ok)
        yield client.events()


async def until(stream: AsyncIterator[Event], kind: str, timeout: float = 120) -> Event:
    """The next event of `kind` (bounded)."""
    with anyio.fail_after(timeout):
        async for event in stream:
            if event.kind == kind:
                return event
    raise AssertionError(f"the stream ended before a {kind} event")
