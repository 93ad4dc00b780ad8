"""Archives in and out of an engine: tars of files to put, and workspace snapshots out.

A snapshot is `get_archive` streamed into a bounded .tar.gz on the daemon's disk. The archive is
read in chunks and compressed as it comes, so memory stays flat; past `limit` bytes of archive the
snapshot is abandoned (the partial file removed) and reported as skipped, never an error of the
attempt. A finished one replaces the last one by rename, so a crash mid-snapshot leaves the
previous snapshot whole.
"""

from __future__ import annotations

import contextlib
import io
import tarfile
import time
import zlib
from pathlib import Path

import aiodocker
import aiohttp
import anyio

from staminad.sandbox.base import Snapshot

CHUNK = 1 << 16
TIMEOUT = 600.0  # seconds for one snapshot (256 MiB over a slow link)
NAME = "workspace.tar.gz"


async def take_snapshot(docker: aiodocker.Docker, container: str, dest_dir: Path, limit: int) -> Snapshot:
    """The workspace of `container` as `dest_dir/workspace.tar.gz`: its size, or why it was skipped."""
    folder = anyio.Path(dest_dir)  # the daemon's disk may be slow: no call here blocks the event loop
    await folder.mkdir(parents=True, exist_ok=True)
    tmp, dest = folder / f".{NAME}.part", folder / NAME
    gz = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: a gzip stream
    read = 0
    try:
        with anyio.fail_after(TIMEOUT):
            async with (
                await anyio.open_file(tmp, "wb") as out,
                docker._query(
                    f"containers/{container}/archive", method="GET", params={"path": "/workspace/."}
                ) as response,
            ):
                while chunk := await response.content.read(CHUNK):
                    read += len(chunk)
                    if read > limit:
                        await tmp.unlink(missing_ok=True)
                        return Snapshot(skipped=f"the workspace archive is over {limit >> 20} MiB")
                    await out.write(gz.compress(chunk))
                await out.write(gz.flush())
    except (aiodocker.exceptions.DockerError, TimeoutError, aiohttp.ClientError, OSError) as exc:
        with contextlib.suppress(OSError):
            await tmp.unlink(missing_ok=True)
        reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        return Snapshot(skipped=f"snapshot failed: {reason}"[:300])
    await tmp.replace(dest)
    return Snapshot(size=(await dest.stat()).st_size, path=str(dest))


def tar_bytes(entries: list[tuple[str, bytes | None, int, int]]) -> bytes:
    """A tar of (name, data or None for a directory, uid, mode) entries."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data, uid, mode in entries:
            info = tarfile.TarInfo(name)
            info.uid = info.gid = uid
            info.mode, info.mtime = mode, int(time.time())
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
