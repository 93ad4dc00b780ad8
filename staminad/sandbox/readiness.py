"""Bounded readiness probing of an agent's server: any HTTP answer means it is up."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from staminad.sandbox.base import NotReady
from staminad.suite.http11 import Http11Transport
from staminad.suite.runner import TransportError

PROBE_INTERVAL = 0.05


async def wait_ready(url: str, timeout: float, still_running: Callable[[], Awaitable[bool]]) -> None:
    """Return once `GET /` gets any HTTP response; raise NotReady on timeout or when the server exits.

    The per-probe bound starts short and doubles: Docker's userland proxy accepts connections on a
    published port and then holds them when nothing listens inside, so a long first probe would
    cost its whole timeout on every server start.
    """
    probe_timeout = 0.1
    with anyio.move_on_after(timeout):
        while True:
            async with Http11Transport.for_url(url, timeout=probe_timeout) as probe:
                try:
                    await probe.request("GET", "/", None)
                    return
                except TransportError as exc:
                    if exc.timeout:
                        probe_timeout = min(probe_timeout * 2, 2.0)
            if not await still_running():
                raise NotReady("run_server.sh exited before the server answered")
            await anyio.sleep(PROBE_INTERVAL)  # polling an external process's port; nothing to await instead
    raise NotReady(f"the server did not answer within {timeout:.0f} s")
