"""Bounded readiness probing of an agent's server, and a diagnosis of how it failed when it did.

The server is ready once `GET /` gets a complete HTTP response within the bounds every suite
request has (the per-request budget, the response-size cap). When it never does, the probe says
what the server did instead (`NotReady.kind`: exited, never listened, closed connections, too slow,
a malformed or oversized answer), and whether any probe reached a listener (`NotReady.connected`).
Whose fault that was (the agent's code, or another program holding the port) is the runtime's to
judge by who holds the port (see `hostprocs.port_blame`), never by what the server's log says.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from protocol.kinds import ServerKind
from staminad.sandbox.base import NotReady
from staminad.sandbox.bounded import read_tail
from staminad.suite.http11 import Http11Transport
from staminad.suite.offload import run_in_thread
from staminad.suite.runner import TransportError

PROBE_INTERVAL = 0.05
FIRST_PROBE = 0.1
LOG_TAIL_BYTES = 2000

Check = Callable[[], Awaitable[bool]]


def _shape(exc: TransportError) -> ServerKind:
    """The server-failure kind one failed probe points at."""
    if exc.refused:
        return "server_not_listening"
    if exc.timeout:
        return "server_too_slow"
    text = str(exc)
    if text.startswith(
        (
            "connection closed",
            "EndOfStream",
            "IncompleteRead",
            "BrokenResourceError",
            "ConnectionResetError",
            "BrokenPipeError",
        )
    ):
        return "server_closed_connection"
    return "server_bad_response"  # oversized body or headers, not HTTP, bad framing


_SAYS: dict[ServerKind, str] = {
    "server_not_listening": "nothing was listening on the port",
    "server_too_slow": "the server accepted the connection but sent no complete response",
    "server_closed_connection": "the server closed the connection without sending a response",
    "server_bad_response": "the server's response broke the limits every test response must keep",
}


async def wait_ready(
    url: str, timeout: float, still_running: Check, request_timeout: float = 5.0, listening: Check | None = None
) -> None:
    """Return once `GET /` gets a complete, bounded HTTP response; raise NotReady saying what happened.

    No new probe starts after `timeout`, but a probe in flight keeps its budget, which grows from
    FIRST_PROBE to the per-request budget `request_timeout`: a server that answers within the
    budget the suite gives every request is ready, however slow. Probes start short because Docker's
    userland proxy accepts connections on a published port and holds them while nothing listens
    inside; once `listening` says the server's socket is open, a timed-out probe goes straight to
    the full budget.
    """
    deadline = time.monotonic() + timeout
    probe_timeout = min(FIRST_PROBE, request_timeout)
    last: TransportError | None = None
    connected = False  # whether any probe got past connect: a listener was there (the runtime's evidence)
    while True:
        with Http11Transport.for_url(url, timeout=probe_timeout) as probe:
            try:
                await run_in_thread(lambda: probe.request("GET", "/", None), probe.interrupt, probe.timeout + 5.0)
                return
            except TransportError as exc:
                last = exc
                connected = connected or not exc.refused
        if not await still_running():
            raise NotReady("server_exited", "`bash run_server.sh` exited before the server answered", connected)
        if time.monotonic() >= deadline:
            break
        if last.timeout and probe_timeout < request_timeout:
            up = listening is not None and await listening()
            probe_timeout = request_timeout if up else min(probe_timeout * 2, request_timeout)
        await anyio.sleep(PROBE_INTERVAL)  # polling an external process's port; nothing to await instead
    kind = _shape(last)
    if kind != "server_not_listening" and listening is not None and not await listening():
        kind = "server_not_listening"  # through Docker's proxy a closed port looks like a closed connection
    detail = _SAYS[kind] if kind == "server_not_listening" else f"{_SAYS[kind]} ({last})"
    raise NotReady(kind, f"the server did not answer GET / within {timeout:.0f} s: {detail}", connected)


def log_tail(path: Path, limit: int = LOG_TAIL_BYTES) -> str:
    """The last `limit` bytes of a server log, decoded leniently (the log is the agent's output: bounded, and only
    ever a regular file)."""
    return read_tail(path, limit)
