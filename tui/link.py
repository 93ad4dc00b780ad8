"""The monitor's connection to staminad: a request channel and an event stream that outlive the daemon.

`Link.run` keeps both connections up: when the daemon is not running, or goes away (a restart, an
upgrade), it reports that once and tries again with a bounded backoff; on every (re)connection it
reports `connected` so the app resyncs from fresh snapshots. Free of Textual: the app hands in plain
callbacks, and tests can drive it directly.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio

from protocol import ErrorReply, Event, Ok, Subscribe
from protocol.client import Client, ClientError
from protocol.messages import Message, RequestFor

R = TypeVar("R", bound=Message)

REQUEST_TIMEOUT = 10.0
BACKOFF = (0.2, 0.5, 1.0, 2.0)  # seconds between reconnection attempts; stays at the last one
REPLAY = 500  # recent events asked for on each connection, so the log shows what happened before


class LinkDown(RuntimeError):
    """A request was made while the daemon is not connected; the message says so in one line."""


class Link:
    def __init__(
        self, socket_path: Path, on_status: Callable[[bool, str], None], on_event: Callable[[Event], None]
    ) -> None:
        self.socket_path = socket_path
        self.on_status, self.on_event = on_status, on_event
        self.daemon = ""
        self._requests: Client | None = None
        self._lock = anyio.Lock()

    @property
    def connected(self) -> bool:
        return self._requests is not None

    async def run(self) -> None:
        """Stay attached until cancelled."""
        failures = 0
        last_error = ""
        while True:
            try:
                async with (
                    Client(self.socket_path, name="stamina-tui", timeout=REQUEST_TIMEOUT) as requests,
                    Client(self.socket_path, name="stamina-tui", timeout=REQUEST_TIMEOUT) as stream,
                ):
                    reply = await stream.request(Subscribe(replay=REPLAY))
                    if not isinstance(reply, Ok):
                        raise ClientError(getattr(reply, "message", "the daemon refused the subscription"))
                    self._requests, failures, last_error = requests, 0, ""
                    self.daemon = requests.daemon
                    self.on_status(True, f"connected to {self.daemon or 'staminad'}")
                    async for event in stream.events():
                        self.on_event(event)
                    error = "the daemon closed the connection (stopped or restarting)"
            except ClientError as exc:
                error = str(exc)
            finally:
                self._requests = None
            if error != last_error:
                self.on_status(False, error)
                last_error = error
            await anyio.sleep(BACKOFF[min(failures, len(BACKOFF) - 1)])  # retry delay, not synchronisation
            failures += 1

    async def request(self, message: RequestFor[R]) -> R:
        """One request and its reply; `ErrorReply` is raised as `ClientError` with the daemon's message."""
        client = self._requests
        if client is None:
            raise LinkDown("not connected to staminad")
        async with self._lock:  # one request at a time on the shared connection
            if client is not self._requests:
                raise LinkDown("the connection to staminad was lost")
            reply = await client.request(message)
        if isinstance(reply, ErrorReply):
            raise ClientError(reply.message)
        return reply


__all__ = ["Link", "LinkDown"]
