"""The runtimes a sweep's sandboxes can run on, one registry entry each (`RUNTIMES`): a new runtime is one entry
here and its own folder beside `docker/`. The CLI's `--runtime` choices and help, the sweep file's check
(`runtime_problem`) and `auto`'s order are read off the registry; each entry imports its implementation only
when it makes a factory, so reading the registry (every `--help`) stays cheap. Choosing among them for a sweep
is the engine's (`engine.runtime.choose_runtime`)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from protocol.usage import did_you_mean, hint
from staminad.sandbox.docker.recipe import LAYOUT, LAYOUT_LABEL, REPO
from staminad.sandbox.settings import ContainerSettings

if TYPE_CHECKING:
    from staminad.sandbox.base import SandboxFactory
    from staminad.sandbox.docker.enginepool import Slots
    from staminad.sandbox.docker.enginespec import EngineSpec
    from staminad.sandbox.ports import PortAllocator


def harness_hint(image: str) -> str:
    """` --harness NAME` when `image` is a harness layer's content-addressed tag (`REPO:NAME-<12 hex>`)."""
    m = re.fullmatch(rf"{re.escape(REPO)}:(.+)-[0-9a-f]{{12}}", image)
    return f" --harness {m.group(1)}" if m else ""


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
        return f"image {image} is not built ({exc.message}); run `{hint('image build')}{harness_hint(image)}`"
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


Made = tuple["SandboxFactory", str]  # the factory, and how the runtime chosen is described to the user


class RunPlace(ContainerSettings, Protocol):
    """What choosing and making a runtime reads of a sweep's `[run]` (the engine's RunSettings has these): the
    container settings, where the workspace lives and the engines."""

    @property
    def workspace(self) -> str: ...

    @property
    def engines(self) -> Sequence[EngineSpec]: ...


@dataclass(frozen=True, kw_only=True)
class Placement:
    """What a runtime gets to build a sweep's sandboxes: its settings, the daemon's port allocator, the engines
    to spread over (none: the local machine) and the daemon's slots in use per engine, shared by its sweeps."""

    run: RunPlace
    ports: PortAllocator
    engines: tuple[EngineSpec, ...] = ()
    slots: dict[str, Slots] | None = None


@dataclass(frozen=True, kw_only=True)
class Runtime:
    """One way to run sandboxes: the one entry a new runtime adds (`RUNTIMES`), from which the sweep file's
    check, the CLI's `--runtime` choices and `auto`'s pick are derived.

    `probe` says why the runtime cannot run these images here (None: it can); `make` builds the sweep's sandbox
    factory (the factory reaps what an earlier daemon left under its label when it starts); `isolates` says
    whether it seals the agent in a container (`auto` prefers those); `remote`, whether it can keep workspaces
    in volumes and spread sandboxes over several engines.
    """

    name: str
    summary: str
    probe: Callable[[Sequence[str]], Awaitable[str | None]]
    make: Callable[[Placement], Made]
    isolates: bool
    remote: bool


async def _probe_local(images: Sequence[str]) -> str | None:
    return None  # processes on this machine: always there


def _make_local(p: Placement) -> Made:
    from staminad.sandbox.local import local_factory

    return local_factory(p.ports), "local"


async def _probe_bwrap(images: Sequence[str]) -> str | None:
    from staminad.sandbox.bwrap.probe import bwrap_problem

    return await bwrap_problem()  # runs this machine's own programs: the images are not used


def _make_bwrap(p: Placement) -> Made:
    from staminad.sandbox.bwrap.box import BwrapFactory

    return BwrapFactory(p.ports), "bwrap"


async def _probe_docker(images: Sequence[str]) -> str | None:
    for image in images:
        if (why := await docker_available(image)) is not None:
            return why
    return None


def _make_docker(p: Placement) -> Made:
    if p.engines:
        from staminad.sandbox.docker.enginepool import EnginePool

        names = ", ".join(f"{s.url} ({s.slots} slots)" for s in p.engines)
        pool = EnginePool(p.run, list(p.engines), slots=p.slots)
        return pool, f"docker on {len(p.engines)} engines, workspace in volumes: {names}"
    if p.run.workspace == "volume":
        from staminad.sandbox.docker.volumefactory import volume_factory

        return volume_factory(p.run), "docker (workspace in volumes)"
    from staminad.sandbox.docker.bindsandbox import docker_factory

    return docker_factory(p.run, p.ports), "docker"


RUNTIMES: dict[str, Runtime] = {
    r.name: r
    for r in (
        Runtime(
            name="docker",
            summary="sealed containers on a Docker engine (the sandbox image built by `image build`)",
            probe=_probe_docker,
            make=_make_docker,
            isolates=True,
            remote=True,
        ),
        Runtime(  # after docker: `auto` takes the isolating runtimes in this order
            name="bwrap",
            summary="bubblewrap enclosures on this machine: own pid, user and mount namespaces, the host's network",
            probe=_probe_bwrap,
            make=_make_bwrap,
            isolates=True,
            remote=False,
        ),
        Runtime(
            name="local",
            summary="processes on this machine, no isolation (for trusted agents and tests)",
            probe=_probe_local,
            make=_make_local,
            isolates=False,
            remote=False,
        ),
    )
}
RUNTIME_CHOICES = ("auto", *RUNTIMES)  # `auto`: the first isolating runtime that can run here, else the others
RUNTIME_HELP = "; ".join(  # the CLI's --runtime help, from the registry
    [
        "auto: the first isolating runtime that can run here, else the others",
        *(f"{n}: {r.summary}" for n, r in RUNTIMES.items()),
    ]
)


def runtime_problem(runtime: str, workspace: str, engines: bool) -> str | None:
    """Why a sweep's `run.runtime` cannot be used with its workspace and engines, in one line (None if it can)."""
    choices = ("auto", *RUNTIMES)
    if runtime not in choices:
        return f"run.runtime must be one of {', '.join(choices)}{did_you_mean(runtime, choices)}"
    if runtime == "auto" or RUNTIMES[runtime].remote:
        return None
    remote = ", ".join(name for name, r in RUNTIMES.items() if r.remote)
    if workspace == "volume":
        return f'run.workspace = "volume" needs a runtime that keeps volumes ({remote}, or auto), not {runtime}'
    if engines:
        return f"run.engines needs a runtime that spreads over engines ({remote}, or auto), not {runtime}"
    return None


__all__ = ["RUNTIMES", "RUNTIME_CHOICES", "RUNTIME_HELP", "Placement", "Runtime", "harness_hint", "runtime_problem"]
