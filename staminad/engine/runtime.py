"""Choosing the runtime: `docker` when the engine is reachable and the sandbox image exists, else `local`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import UsageError
from protocol.usage import hint
from staminad.engine.config import RunSettings, SweepFile, configurations
from staminad.sandbox.base import SandboxFactory
from staminad.sandbox.enginespec import EngineSpec
from staminad.sandbox.image import LAYOUT, LAYOUT_LABEL, REPO
from staminad.sandbox.local import local_factory
from staminad.sandbox.ports import PortAllocator

if TYPE_CHECKING:
    from staminad.sandbox.engines import Slots


async def docker_available(image: str) -> str | None:
    """None if Docker can run `image`; else why not, in one line."""
    try:
        import aiodocker
    except ImportError:
        return "aiodocker is not installed"
    try:
        docker = aiodocker.Docker()
    except Exception as exc:  # noqa: BLE001 - no socket, bad DOCKER_HOST
        return f"no Docker engine ({exc})"
    try:
        info = await docker.images.inspect(image)
    except aiodocker.exceptions.DockerError as exc:
        return f"image {image} is not built ({exc.message}); run `{hint('image build')}{_harness_flag(image)}`"
    except Exception as exc:  # noqa: BLE001 - any failure to reach the engine is the one-line answer
        return f"no Docker engine ({type(exc).__name__}: {exc})"
    finally:
        await docker.close()
    labels = (info.get("Config") or {}).get("Labels") or {}
    if labels.get(LAYOUT_LABEL) != LAYOUT:
        return (
            f"image {image} predates the sealed sandbox (label {LAYOUT_LABEL}={LAYOUT} missing); "
            f"run `{hint('image build')}`"
        )
    return None


class RuntimeUnavailable(UsageError):
    """The runtime a sweep or `--runtime` asks for cannot be used here, and why."""


def _harness_flag(image: str) -> str:
    """` --harness NAME` when `image` is a harness's layer tag, else nothing."""
    from staminad.agents.harnesses import HARNESSES

    return next((f" --harness {name}" for name in HARNESSES if image.startswith(f"{REPO}:{name}-")), "")


def sweep_images(sweep: SweepFile) -> list[str]:
    """The images a sweep's configurations run, in order, once each: a harness's layer, else `[run] image`."""
    from staminad.agents.base import adapter_for

    images = [adapter_for(c.agent).image or sweep.run.image for c in configurations(sweep)]
    return list(dict.fromkeys(images))


async def choose_runtime(
    runtime: str,
    run: RunSettings,
    ports: PortAllocator,
    images: list[str] | None = None,
    engines: list[EngineSpec] | None = None,
    slots: dict[str, Slots] | None = None,
) -> tuple[SandboxFactory, str]:
    """Docker when it can run every image the sweep needs (`images`, default `[run] image`), else local.

    A sweep whose workspace lives in volumes (`[run] workspace = "volume"`) needs Docker: never local. With
    engines (the sweep's `[run] engines`, else the daemon's `--engine`s for a sweep not run locally) the
    sandboxes are spread over them in volume mode; the images must be on the local engine, which they are
    copied from. `slots` is the daemon's count of slots in use per engine, shared by its sweeps.
    """
    if runtime == "local" and (run.workspace == "volume" or run.engines):
        raise RuntimeUnavailable(
            "runtime local cannot keep a workspace in volumes or spread over engines: use --runtime docker or auto"
        )
    specs = run.engines or (engines if runtime != "local" else None) or []
    if specs:
        for image in images or [run.image]:
            why = await docker_available(image)
            if why is not None:
                raise RuntimeUnavailable(f"cannot spread the sweep over its engines: {why}")
        from staminad.sandbox.engines import EnginePool

        names = ", ".join(f"{s.url} ({s.slots} slots)" for s in specs)
        return EnginePool(run, specs, slots=slots), f"docker on {len(specs)} engines, workspace in volumes: {names}"
    if runtime in ("docker", "auto"):
        why = None
        for image in images or [run.image]:
            why = why or await docker_available(image)
        if why is None:
            if run.workspace == "volume":
                from staminad.sandbox.volume import volume_factory

                return volume_factory(run), "docker (workspace in volumes)"
            from staminad.sandbox.docker import docker_factory

            return docker_factory(run, ports), "docker"
        if runtime == "docker" or run.workspace == "volume":
            raise RuntimeUnavailable(f"runtime docker unavailable: {why}")
        return local_factory(ports), f"local (docker unavailable: {why})"
    return local_factory(ports), "local"
