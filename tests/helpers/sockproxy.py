"""A Unix-socket proxy in front of the Docker engine's socket, which a test cuts and restores: the engine vanishes
for the daemon (every open connection reset, every new one refused) while dockerd and its containers run on.

It runs its own asyncio loop in a thread, so the test's loop (or a daemon in another process, pointed at it by
DOCKER_HOST) sees it as any engine socket. While cut, it keeps listening but aborts each connection it accepts
before reading a byte (an engine whose API is gone: the client's request fails at once), and counts them.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from typing import Any

ENGINE = "/var/run/docker.sock"


class SocketProxy:
    """`unix://<path>` forwarding to the engine's socket until `cut`, again after `restore`."""

    def __init__(self, path: Path, target: str = ENGINE) -> None:
        self.path, self.target = path, target
        self.url = f"unix://{path}"
        self.refused = 0  # connections aborted while cut
        self._cut = False
        self._open: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sockproxy", daemon=True)
        self._server: asyncio.AbstractServer | None = None

    def __enter__(self) -> SocketProxy:
        self._thread.start()
        self._call(self._listen())
        return self

    def __exit__(self, *exc: object) -> None:
        self._call(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        self.path.unlink(missing_ok=True)

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=30)

    def cut(self) -> None:
        """The engine is gone: open connections reset, new ones refused, until `restore`."""
        self._call(self._set(True))

    def restore(self) -> None:
        """The engine answers again."""
        self._call(self._set(False))

    async def _set(self, cut: bool) -> None:
        self._cut = cut
        if cut:
            for writer in list(self._open):
                writer.transport.abort()

    async def _listen(self) -> None:
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.path))

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._open):
            writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._cut:
            self.refused += 1
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(self.target)
        except OSError:
            writer.transport.abort()
            return
        self._open |= {writer, up_writer}
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            self._open -= {writer, up_writer}
            for w in (writer, up_writer):
                w.transport.abort()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one direction until its end, then half-close (an exec's stdin ends so), or until either side fails."""
    with contextlib.suppress(OSError, RuntimeError):
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
