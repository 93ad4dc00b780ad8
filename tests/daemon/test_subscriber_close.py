"""An event stream (`staminad logs`, the TUI) whose client went away is released at once, not at the next event."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from protocol import Subscribe
from protocol.client import Client
from protocol.events import SweepFinished
from staminad.daemon.bus import EventBus
from staminad.daemon.connection import serve_client

pytestmark = pytest.mark.anyio


class _Daemon:
    """What a streaming connection reads of the daemon: its bus and idle timeout (the store is never asked)."""

    def __init__(self) -> None:
        self.bus = EventBus()
        self.idle_timeout = 300.0
        self.store = None


async def test_a_closed_subscriber_is_released_without_any_event(tmp_path: Path) -> None:
    """A client that subscribes and closes its end: its connection ends and its subscription goes, no event sent."""
    daemon = _Daemon()
    served = anyio.Event()
    path = tmp_path / "s.sock"
    async with await anyio.create_unix_listener(path) as listener, anyio.create_task_group() as tg:

        async def serve_one() -> None:
            stream = await listener.accept()
            await serve_client(cast(Any, daemon), stream)
            served.set()

        tg.start_soon(serve_one)
        async with Client(path, keepalive=None) as client:
            reply = await client.request(Subscribe())
            assert getattr(reply, "detail", "") == "subscribed" and daemon.bus.subscribers == 1
        with anyio.fail_after(10):  # the daemon saw the close itself: nothing was published to fail a write
            await served.wait()
        assert daemon.bus.subscribers == 0 and daemon.bus.published == 0
        daemon.bus.publish("s", SweepFinished())  # the bus has no one left to offer it to
        assert daemon.bus.subscribers == 0


async def test_a_live_subscriber_still_gets_its_events(tmp_path: Path) -> None:
    """Watching for the close does not disturb a client that stays: it gets each event published."""
    daemon = _Daemon()
    path = tmp_path / "s.sock"
    async with await anyio.create_unix_listener(path) as listener, anyio.create_task_group() as tg:

        async def serve_one() -> None:
            await serve_client(cast(Any, daemon), await listener.accept())

        tg.start_soon(serve_one)
        async with Client(path, keepalive=None) as client:
            await client.request(Subscribe())
            daemon.bus.publish("s", SweepFinished())
            with anyio.fail_after(10):
                async for event in client.events():
                    assert event.sweep == "s" and isinstance(event.data, SweepFinished)
                    break
        tg.cancel_scope.cancel()
