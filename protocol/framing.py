"""4-byte big-endian length prefix, then one msgpack message; frames above MAX_FRAME are refused.

`FrameReader` keeps a frame's header once read, so a read cancelled between header and body resumes
with that body: the body is never taken for the next header. `write_frame` sends a frame whole, even
when its caller is cancelled, so the peer never sees half of one.
"""

from __future__ import annotations

import struct

import anyio
from anyio.abc import ByteReceiveStream, ByteStream
from anyio.streams.buffered import BufferedByteReceiveStream

MAX_FRAME = 4 * 1024 * 1024
_HEADER = struct.Struct(">I")
WRITE_TIMEOUT = 30.0  # bound on sending one frame to a peer that stopped reading


class FrameError(Exception):
    """A frame that cannot be accepted (too large, or the peer closed mid-frame)."""


class FrameReader:
    """Reads frames off one stream; cancellation-safe (anyio's buffered stream keeps partial reads too)."""

    def __init__(self, stream: ByteReceiveStream, max_frame: int = MAX_FRAME) -> None:
        self.buffered = BufferedByteReceiveStream(stream)
        self.max_frame = max_frame
        self._length: int | None = None  # header read, body not yet

    async def read(self) -> bytes:
        if self._length is None:
            (length,) = _HEADER.unpack(await self.buffered.receive_exactly(_HEADER.size))
            if length > self.max_frame:
                raise FrameError(f"frame of {length} bytes exceeds the limit of {self.max_frame}")
            self._length = length
        body = await self.buffered.receive_exactly(self._length)
        self._length = None
        return body


async def read_frame(reader: FrameReader) -> bytes:
    return await reader.read()


def frame(payload: bytes) -> bytes:
    """`payload` with its header, for a caller that writes it itself."""
    if len(payload) > MAX_FRAME:
        raise FrameError(f"refusing to send a frame of {len(payload)} bytes")
    return _HEADER.pack(len(payload)) + payload


async def write_frame(stream: ByteStream, payload: bytes, timeout: float = WRITE_TIMEOUT) -> None:
    data = frame(payload)
    # Shielded (and bounded on its own): a frame cut off by a cancelled caller would desynchronise the stream.
    with anyio.CancelScope(shield=True), anyio.fail_after(timeout):
        await stream.send(data)
