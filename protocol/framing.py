"""4-byte big-endian length prefix, then one msgpack message; frames above MAX_FRAME are refused."""

from __future__ import annotations

import struct

from anyio.abc import ByteStream
from anyio.streams.buffered import BufferedByteReceiveStream

MAX_FRAME = 4 * 1024 * 1024
_HEADER = struct.Struct(">I")


class FrameError(Exception):
    """A frame that cannot be accepted (too large, or the peer closed mid-frame)."""


async def read_frame(reader: BufferedByteReceiveStream, max_frame: int = MAX_FRAME) -> bytes:
    (length,) = _HEADER.unpack(await reader.receive_exactly(_HEADER.size))
    if length > max_frame:
        raise FrameError(f"frame of {length} bytes exceeds the limit of {max_frame}")
    return await reader.receive_exactly(length)


async def write_frame(stream: ByteStream, payload: bytes) -> None:
    if len(payload) > MAX_FRAME:
        raise FrameError(f"refusing to send a frame of {len(payload)} bytes")
    await stream.send(_HEADER.pack(len(payload)) + payload)
