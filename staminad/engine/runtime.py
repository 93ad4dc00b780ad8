"""Choosing the runtime a sweep's sandboxes run on, from the registry (`sandbox.runtimes`): `auto` takes
`docker` when the engine is reachable and the sandbox image exists, else `bwrap` where bubblewrap can make its
namespaces, else `local` (the isolating runtimes first, in the registry's order)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import UsageError
from staminad.sandbox import runtimes
from staminad.sandbox.runtimes import Made, Placement, RunPlace

if TYPE_CHECKING:
    from staminad.sandbox.docker.enginepool import Slots
    from staminad.sandbox.docker.enginespec import EngineSpec
    from staminad.sandbox.ports import PortAllocator


class RuntimeUnavailable(UsageError):
    """The runtime a sweep or `--runtime` asks for cannot be used here, and why."""


async def choose_runtime(
    runtime: str,
    run: RunPlace,
    ports: PortAllocator,
    images: list[str] | None = None,
    engines: list[EngineSpec] | None = None,
    slots: dict[str, Slots] | None = None,
) -> Made:
    """The named runtime if it can run every image the sweep needs (`images`, default `[run] image`); `auto`
    takes the first isolating runtime that can, else the first that can at all (saying why the others could not).

    A sweep whose workspace lives in volumes (`[run] workspace = "volume"`) or that is spread over engines (the
    sweep's `[run] engines`, else the daemon's `--engine`s for a sweep not run locally) needs a remote-capable
    runtime: never local.
    """
    need_remote = run.workspace == "volume" or bool(run.engines)
    problem = runtimes.runtime_problem(runtime, run.workspace, bool(run.engines))
    if problem is not None:
        raise RuntimeUnavailable(f"runtime {runtime}: {problem}")
    wanted = list(images or [run.image])
    names = (
        [runtime] if runtime != "auto" else sorted(runtimes.RUNTIMES, key=lambda n: not runtimes.RUNTIMES[n].isolates)
    )
    why: list[str] = []
    for name in names:
        entry = runtimes.RUNTIMES[name]
        if need_remote and not entry.remote:
            continue
        specs = tuple(run.engines or (engines or [] if entry.remote else []))
        problem = await entry.probe(wanted)
        if problem is None:
            factory, said = entry.make(Placement(run=run, ports=ports, engines=specs, slots=slots))
            return factory, said if not why else f"{said} ({'; '.join(why)})"
        if specs and entry.remote:
            raise RuntimeUnavailable(f"cannot spread the sweep over its engines: {problem}")
        if runtime != "auto" or need_remote:
            raise RuntimeUnavailable(f"runtime {name} unavailable: {problem}")
        why.append(f"{name} unavailable: {problem}")
    raise RuntimeUnavailable(f"no runtime can run this sweep here: {'; '.join(why)}")


__all__ = ["RuntimeUnavailable", "choose_runtime"]
