"""Requests cancelled mid-flight on one connection never shift the replies of later requests; a reply of another
type than the request declares is refused."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, get_args

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import SocketStream

from protocol import (
    PROTOCOL_VERSION,
    Cancel,
    ErrorReply,
    FrameReader,
    GetSweep,
    HelloReply,
    Message,
    Ok,
    SweepInfo,
    decoder,
    encoder,
    write_frame,
)
from protocol.client import Client, ClientError
from protocol.messages import Request, reply_type
from tests.helpers.inprocess import running_daemon, submit
from tests.helpers.sweeps import write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


async def _until(condition: object, limit: float = 10) -> None:
    """Yield to other tasks until `condition()` holds (bounded); it is what we wait for, not time."""
    with anyio.fail_after(limit):
        while not condition():  # type: ignore[operator]
            await anyio.lowlevel.checkpoint()


class HeldServer:
    """A protocol peer that answers only when the test says so, and can send a reply's header alone."""

    def __init__(self) -> None:
        self.requests: list[Any] = []
        self.stream: SocketStream | None = None
        self.frames: FrameReader | None = None
        self.enc, self.dec = encoder(), decoder(Message)

    async def serve(self, path: Path, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        async with await anyio.create_unix_listener(path) as listener:
            task_status.started()
            self.stream = await listener.accept()
            self.frames = FrameReader(self.stream)
            hello = self.dec.decode(await self.frames.read())
            await write_frame(
                self.stream, self.enc.encode(HelloReply(version=PROTOCOL_VERSION, daemon="held", rid=hello.rid))
            )
            while True:
                self.requests.append(self.dec.decode(await self.frames.read()))

    def reply(self, request: Cancel) -> bytes:
        body = self.enc.encode(Ok(detail=request.sweep, rid=request.rid))
        return struct.pack(">I", len(body)) + body


async def test_a_reply_cut_between_header_and_body_by_a_cancel_is_skipped_whole(tmp_path: Path) -> None:
    """Cancelled after reading a reply's header: the next request gets its own reply, not a misread frame."""
    server, path = HeldServer(), tmp_path / "held.sock"
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve, path)
        async with Client(path, timeout=10) as client:
            assert client.frames is not None and server.stream is not None
            got: list[object] = []

            async def ask(name: str) -> None:
                got.append(await client.request(Cancel(sweep=name)))

            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as inner:
                    inner.start_soon(ask, "first")
                    await _until(lambda: len(server.requests) == 1)
                    frame = server.reply(server.requests[0])
                    await server.stream.send(frame[:4])  # the header alone
                    await _until(lambda: client.frames._length is not None)
                    scope.cancel()
            assert got == []
            await server.stream.send(frame[4:])  # the first reply's body arrives after its request was dropped
            async with anyio.create_task_group() as inner:
                inner.start_soon(ask, "second")
                await _until(lambda: len(server.requests) == 2)
                await server.stream.send(server.reply(server.requests[1]))
            assert got == [Ok(detail="second", rid=server.requests[1].rid)]
        tg.cancel_scope.cancel()


async def test_a_reply_arriving_after_its_request_was_cancelled_is_not_the_next_ones(tmp_path: Path) -> None:
    """A late reply to a cancelled request is skipped; every later request gets the answer to itself."""
    server, path = HeldServer(), tmp_path / "held.sock"
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve, path)
        async with Client(path, timeout=10) as client:
            assert server.stream is not None
            for n in range(3):
                with anyio.CancelScope() as scope:
                    async with anyio.create_task_group() as inner:
                        inner.start_soon(client.request, Cancel(sweep=f"dropped-{n}"))
                        await _until(lambda n=n: len(server.requests) == 2 * n + 1)
                        scope.cancel()
                await server.stream.send(server.reply(server.requests[-1]))  # late
                answers: list[object] = []

                async def ask(name: str, into: list[object] = answers) -> None:
                    into.append(await client.request(Cancel(sweep=name)))

                async with anyio.create_task_group() as inner:
                    inner.start_soon(ask, f"kept-{n}")
                    await _until(lambda n=n: len(server.requests) == 2 * n + 2)
                    await server.stream.send(server.reply(server.requests[-1]))
                assert answers == [Ok(detail=f"kept-{n}", rid=server.requests[-1].rid)]
        tg.cancel_scope.cancel()


async def test_requests_cancelled_at_every_point_against_a_real_daemon_leave_later_replies_right(
    tmp_path: Path,
) -> None:
    """Cancelling after 0..N scheduler steps, on one connection: each completed request gets its own answer."""
    state = tmp_path / "st"
    async with running_daemon(state):
        await submit(state, write_sweep(tmp_path, "real", ["reference"], turns=1))
        async with Client(state / "staminad.sock", timeout=10) as client:
            for steps in range(40):
                with anyio.CancelScope() as scope:
                    async with anyio.create_task_group() as inner:
                        inner.start_soon(client.request, GetSweep(sweep=f"gone-{steps}"))
                        for _ in range(steps):
                            await anyio.lowlevel.checkpoint()
                        scope.cancel()
                mine = await client.request(GetSweep(sweep="real"))
                assert isinstance(mine, SweepInfo) and mine.sweep == "real"
                other = await client.request(GetSweep(sweep=f"missing-{steps}"))
                assert isinstance(other, ErrorReply) and other.message == f"no sweep missing-{steps}"


async def test_a_reply_of_another_type_than_the_request_declares_is_the_daemons_fault(tmp_path: Path) -> None:
    """`GetSweep` answered with `Ok` is a ClientError naming both, never handed to the caller as a sweep."""
    server, path = HeldServer(), tmp_path / "held.sock"
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve, path)
        async with Client(path, timeout=10) as client:
            assert server.stream is not None
            outcome: list[BaseException] = []

            async def ask() -> None:
                try:
                    await client.request(GetSweep(sweep="x"))
                except ClientError as exc:
                    outcome.append(exc)

            async with anyio.create_task_group() as inner:
                inner.start_soon(ask)
                await _until(lambda: len(server.requests) == 1)
                await server.stream.send(server.reply(server.requests[0]))
            assert [str(e) for e in outcome] == ["the daemon answered GetSweep with Ok"]
        tg.cancel_scope.cancel()


def test_every_request_declares_the_reply_it_is_answered_with() -> None:
    """Each request type of the union names one reply type of the union, never `ErrorReply` (always possible)."""
    replies = set(get_args(Message))
    for request in get_args(Request):
        declared = reply_type(request)
        assert declared in replies and declared is not ErrorReply, request
