"""Copying a sandbox image built on the local engine to another engine, with no registry: save, stream, load.

The sandbox images are built offline on the daemon's own engine (`staminad image build`); an engine
elsewhere gets them as `docker save | docker load` does it, through the two engines' APIs: the local
engine's `GET /images/{name}/get` tar stream goes straight into the other's `POST /images/load`,
chunk by chunk (never held whole in memory), bounded in size and time. An engine is given an image
only when it lacks it, judged by content: the image ID (the digest of the image's configuration,
the same on every engine that holds it). After loading, the ID on the target is checked again, so an
engine that holds another image under the same tag is refused, never silently used.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiodocker
import aiohttp
import anyio

from protocol.usage import hint

LOAD_TIMEOUT = 900.0  # seconds for one image to go across (a few hundred MB here; a slow link takes longer)
MAX_IMAGE_BYTES = 16 << 30  # an image archive past this is refused, not streamed on
CHUNK = 1 << 20
INSPECT_TIMEOUT = 30.0


class DistributionError(RuntimeError):
    """An image could not be put on an engine (missing locally, too large, refused, or a different ID after).

    `transient`: the engine or the link failed (a timeout, a dropped connection): worth trying again later."""

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


async def image_id(client: aiodocker.Docker, name: str) -> str | None:
    """The ID (content hash) of `name` on that engine; None when the engine does not hold it."""
    try:
        with anyio.fail_after(INSPECT_TIMEOUT):
            info: dict[str, Any] = await client.images.inspect(name)
    except aiodocker.exceptions.DockerError as exc:
        if exc.status == 404:
            return None
        raise DistributionError(f"cannot inspect image {name}: {exc.message}", transient=True) from None
    except TimeoutError:
        raise DistributionError(
            f"no answer about image {name} within {INSPECT_TIMEOUT:.0f} s", transient=True
        ) from None
    except (aiohttp.ClientError, OSError) as exc:
        why = f"cannot inspect image {name}: {type(exc).__name__}: {exc}"
        raise DistributionError(why, transient=True) from None
    return str(info["Id"])


async def distribute(
    source: aiodocker.Docker,
    target: aiodocker.Docker,
    name: str,
    where: str = "the engine",
    timeout: float = LOAD_TIMEOUT,
    limit: int = MAX_IMAGE_BYTES,
) -> int:
    """Make `target` hold `name` with the ID it has on `source`; returns the bytes copied (0: it had it)."""
    want = await image_id(source, name)
    if want is None:
        raise DistributionError(f"image {name} is not on the local engine; run `{hint('image build')}`")
    if await image_id(target, name) == want:
        return 0
    copied = 0

    async def chunks(content: aiohttp.StreamReader) -> AsyncIterator[bytes]:
        nonlocal copied
        while chunk := await content.read(CHUNK):
            copied += len(chunk)
            if copied > limit:
                raise DistributionError(f"image {name} is over {limit >> 20} MiB as an archive; not copied")
            yield chunk

    try:
        with anyio.fail_after(timeout):
            async with source.images.export_image(name) as content:
                await target.images.import_image(data=chunks(content))
    except TimeoutError:
        raise DistributionError(f"copying image {name} to {where} took over {timeout:.0f} s", transient=True) from None
    except aiodocker.exceptions.DockerError as exc:
        raise DistributionError(f"cannot copy image {name} to {where}: {exc.message}", transient=True) from None
    except (aiohttp.ClientError, OSError) as exc:
        raise DistributionError(
            f"cannot copy image {name} to {where}: {type(exc).__name__}: {exc}", transient=True
        ) from None
    got = await image_id(target, name)
    if got != want:
        raise DistributionError(f"image {name} on {where} has ID {got} after loading, not {want}")
    return copied


__all__ = ["DistributionError", "distribute", "image_id"]
