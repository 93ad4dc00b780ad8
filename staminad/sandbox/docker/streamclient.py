"""The host side of a container's launcher reached over one attached `docker exec` (no shared disk).

A volume sandbox's root-side operations go to `streamlauncher.py` (see its docstring) as JSON lines
with request ids on the exec's stdin; answers come back as JSON lines on its stdout. One request is
in flight at a time (a scenario drives its sandbox serially), every read is bounded in size and every
wait in time; an answer left over from a request that timed out is recognised by its id and dropped.
When the stream breaks (the container was lost or restarted, the engine hung up) it is closed, and
the next call opens a new one; a launcher that ends says how (its exit status and the end of what it
wrote to stderr), so a launcher that cannot run is told apart from a lost container.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import aiodocker
import aiohttp
import anyio
import msgspec

from protocol.kinds import InfraKind
from staminad.sandbox.base import InsideFailure, SandboxError
from staminad.sandbox.docker.replies import A, Tagged, decode
from staminad.sandbox.docker.requests import Request, answer_of, wire

LINE_LIMIT = 2 << 20  # bytes of one answer line (a `read` returns at most 1 MiB of text, JSON-escaped)
OPEN_TIMEOUT = 30.0
CHECK_INTERVAL = 1.0  # seconds between looks at the container while an answer is late
STDERR_LIMIT = 2048  # bytes of the launcher's stderr kept (its end) to say why it ended
EXIT_TIMEOUT = 5.0  # seconds to ask the engine how an ended launcher exited

Opener = Callable[[], Awaitable[Any]]  # creates the launcher's exec (aiodocker Exec), stdin attached
Check = Callable[[], Awaitable[None]]
_tagged = msgspec.json.Decoder(Tagged)  # an answer's id alone, to find the one to this request


class LauncherStream:
    """Requests to one container's streaming launcher; `open` makes the exec on first use."""

    def __init__(self, name: str, opener: Opener) -> None:
        self.name = name
        self._opener = opener
        self._stream: Any = None
        self._exec: Any = None
        self._buffer = bytearray()
        self._stderr = bytearray()
        self._lock = anyio.Lock()

    async def _ensure(self) -> Any:
        if self._stream is None:
            try:
                with anyio.fail_after(OPEN_TIMEOUT):
                    ex = await self._opener()
                    stream = ex.start(detach=False)
                    await stream.__aenter__()
            except aiodocker.exceptions.DockerError as exc:
                kind: InfraKind = "sandbox_lost" if exc.status in (404, 409) else "engine_error"
                raise SandboxError(f"cannot attach to the launcher of {self.name}: {exc.message}", kind) from None
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                raise SandboxError(f"cannot attach to the launcher of {self.name}: {exc!r}", "engine_error") from None
            self._stream, self._exec, self._buffer, self._stderr = stream, ex, bytearray(), bytearray()
        return self._stream

    async def close(self) -> None:
        """Hang up: the launcher reads the end of its stdin and exits (what it spawned runs on)."""
        stream, self._stream = self._stream, None
        if stream is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5), contextlib.suppress(Exception):
                await stream.close()

    async def _ended(self) -> str:
        """How the launcher's exec ended, as far as the engine says within a few seconds ("" if it cannot)."""
        how = ""
        with anyio.move_on_after(EXIT_TIMEOUT), contextlib.suppress(Exception):
            code = (await self._exec.inspect()).get("ExitCode")
            how = f"exit {code}" if code is not None else ""
        err = bytes(self._stderr).decode("utf-8", "replace").strip().splitlines()
        return "; ".join(filter(None, [how, err[-1][-300:] if err else ""]))

    async def _line(self, stream: Any) -> bytes:
        while b"\n" not in self._buffer:
            msg = await stream.read_out()
            if msg is None:
                how = await self._ended()
                raise SandboxError(f"the launcher of {self.name} hung up{f' ({how})' if how else ''}", "sandbox_lost")
            if msg.stream == 2:
                self._stderr = (self._stderr + msg.data)[-STDERR_LIMIT:]
                continue
            self._buffer += msg.data
            if len(self._buffer) > LINE_LIMIT and b"\n" not in self._buffer:
                raise SandboxError(f"the launcher of {self.name} sent an oversized answer", "engine_error")
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer = bytearray(rest)
        return line

    async def call(self, request: Request[A], timeout: float, check: Check) -> A:
        """The launcher's answer to one request, decoded as the Struct its type names (see `requests`); a
        SandboxError when it fails, breaks or is late.

        `check` raises SandboxError when the container is no longer usable; it runs while the answer is late
        (every CHECK_INTERVAL), so a container paused or removed meanwhile is known in a second."""
        rid = secrets.token_hex(8)
        op, args = wire(request)
        line = json.dumps({"op": op, "args": args, "id": rid}).encode() + b"\n"
        async with self._lock:
            try:
                with anyio.fail_after(timeout):
                    stream = await self._ensure()
                    await stream.write_in(line)
                    while True:
                        with anyio.move_on_after(CHECK_INTERVAL) as late:
                            line = await self._line(stream)
                        if late.cancelled_caught:
                            await check()
                            continue
                        try:
                            if _tagged.decode(line).id == rid:
                                break
                        except (msgspec.DecodeError, msgspec.ValidationError):
                            continue  # not an answer (the launcher never writes one that is not JSON)
            except TimeoutError:  # it runs in the container, beside the agent's processes: judged (`InsideFailure`)
                await self.close()
                raise InsideFailure(f"the launcher of {self.name} did not answer {op} within {timeout:.0f} s") from None
            except SandboxError:
                await self.close()
                raise
            except (aiohttp.ClientError, OSError, RuntimeError, AssertionError) as exc:
                # AssertionError: aiodocker's write_in on a stream whose connection has already gone.
                await self.close()
                raise SandboxError(f"the launcher of {self.name}: {exc!r}", "sandbox_lost") from None
        return decode(line, answer_of(request), op)
