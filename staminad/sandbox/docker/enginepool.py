"""A sweep spread over several Docker engines: each scenario placed on an engine with a free slot, kept there.

`EnginePool` is a `SandboxFactory` over one factory per engine (volume sandboxes: nothing is shared
with the daemon's disk). A scenario's sandbox (`placedsandbox.PlacedSandbox`) takes a slot on an engine when it
is prepared and gives it back when it is closed; the pool's capacity is the sum of the slots (shared by a
daemon's sweeps, `Slots`), and the sweep's `parallel` and the daemon's limit apply on top. Where a
scenario is placed is written next to its sandbox (`placementfiles`), so after a restart (kill -9 included)
it goes back to the same engine and adopts its running container there, even past that engine's slots.

An engine is healthy while it answers a bounded `/_ping`, asked at most every few seconds while any
operation of its sandboxes runs. When it stops answering, every operation of its sandboxes ends at once
as `sandbox_lost`: an infra retry, never scored, R untouched. The retry's `prepare` places the scenario on
another healthy engine, puts the last workspace snapshot (taken after every tested attempt) into its
fresh volumes and carries on; what the lost attempt had done since is redone. It moves only when that
snapshot is of its last tested attempt; otherwise it waits for its engine (`ENGINE_WAIT` per retry). An
engine that answers pings but fails to make a sandbox is suspect for a while and the sandbox goes
elsewhere. A sandbox of an engine that does not answer is dropped without a word to it; the sweep's end
reaps whatever of the sweep each engine that answers still holds.

Images go to an engine from the local one (`distribute`) before its first sandbox there, once per
image, checked by content hash.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import msgspec

from protocol.errors import UsageError
from protocol.kinds import InfraKind
from staminad.sandbox.base import (
    Grant,
    SandboxError,
    SandboxFactory,
)
from staminad.sandbox.docker.distribute import DistributionError, distribute
from staminad.sandbox.docker.engineconnect import Endpoint, local_socket
from staminad.sandbox.docker.enginespec import EngineSpec
from staminad.sandbox.docker.placedsandbox import PlacedSandbox
from staminad.sandbox.docker.placementfiles import PLACEMENT, read_placement
from staminad.sandbox.outage import watches_by_url
from staminad.sandbox.settings import ContainerSettings

ENGINE_WAIT = 60.0  # seconds a sandbox waits for any engine to answer before its attempt is an infra retry
CLOSE_TIMEOUT = 30.0  # bound on removing what a sweep left on an engine that answers


class EngineStatus(msgspec.Struct, frozen=True, kw_only=True):
    """One engine as the pool sees it (for `staminad status` and the TUI)."""

    url: str
    slots: int
    used: int  # slots held, by every sweep of the daemon sharing the engine
    healthy: bool
    detail: str = ""
    scenarios: int = 0  # of this pool's sweep, holding a slot there now
    down_since: float = 0.0  # Unix time an outage its scenarios wait out began (`outage`); 0 while it answers
    waiting: int = 0  # scenarios paused until it answers again


class Slots:
    """How many sandboxes hold a slot on one engine: shared by every sweep's pool of one daemon."""

    def __init__(self) -> None:
        self.used = 0


class _Engine:
    """An endpoint with its slots and the factory making sandboxes there."""

    def __init__(self, endpoint: Endpoint, factory: SandboxFactory, slots: Slots) -> None:
        self.endpoint, self.factory, self.slots = endpoint, factory, slots
        self.images: set[str] = set()  # images known to be there (distributed or found)
        self.refused: dict[str, str] = {}  # image -> why it cannot be put there
        self.image_lock = anyio.Lock()

    @property
    def url(self) -> str:
        return self.endpoint.url

    @property
    def used(self) -> int:
        return self.slots.used

    @used.setter
    def used(self, n: int) -> None:
        self.slots.used = n

    @property
    def free(self) -> int:
        return self.endpoint.spec.slots - self.used


def volume_on(run: ContainerSettings) -> Callable[[Endpoint], SandboxFactory]:
    """Volume sandboxes on an endpoint: published on loopback for a local engine, on every address elsewhere."""

    def make(endpoint: Endpoint) -> SandboxFactory:
        from staminad.sandbox.docker.volumefactory import volume_factory

        publish = "127.0.0.1" if endpoint.host in ("127.0.0.1", "localhost", "::1") else "0.0.0.0"
        return volume_factory(run, endpoint.connect, publish, endpoint.host, endpoint.spec.gateway)

    return make


class EnginePool:
    """The `SandboxFactory` of a sweep over several engines (see the module docstring)."""

    def __init__(
        self,
        run: ContainerSettings,
        specs: list[EngineSpec],
        make: Callable[[Endpoint], SandboxFactory] | None = None,
        source: str | None = None,
        slots: dict[str, Slots] | None = None,
    ) -> None:
        """`slots`: the daemon's count per engine URL, shared by its sweeps (a pool of its own by default)."""
        make = make or volume_on(run)
        book = {} if slots is None else slots
        self.run = run
        self.engines = [
            _Engine(e, make(e), book.setdefault(e.url, Slots())) for e in (Endpoint(spec) for spec in specs)
        ]
        self.source = Endpoint(EngineSpec(url=source or local_socket()))  # where the images are built
        self.placed: dict[str, str] = {}  # label -> engine url of the scenarios holding a slot, for the views
        self._freed = anyio.Event()

    # --- placement ----------------------------------------------------------------------------

    def engine(self, url: str) -> _Engine | None:
        return next((e for e in self.engines if e.url == url), None)

    def provisional(self, root: Path) -> _Engine:
        """The engine a new sandbox starts out on: where it was placed before, else the one with most room."""
        before = self.engine(read_placement(root))
        if before is not None and before.endpoint.healthy:
            return before
        return max(self.engines, key=lambda e: (e.endpoint.usable, e.free))

    async def acquire(
        self, preferred: _Engine, image: str, sticky: bool = False, tried: tuple[_Engine, ...] = (), only: bool = False
    ) -> _Engine:
        """A slot on `preferred` if it answers and has one (`sticky`: even if full, since the scenario's container
        is there already), else on the usable engine with most room, never one of `tried`; waits for a slot to
        be freed, and up to ENGINE_WAIT for an engine to answer, else SandboxError."""
        waited_since = time.monotonic()
        while True:
            others = [] if only else sorted((e for e in self.engines if e is not preferred), key=lambda e: -e.free)
            candidates = [e for e in (preferred, *others) if e not in tried]
            for engine in candidates:

                def room(engine: _Engine = engine) -> bool:
                    return engine.free > 0 or (sticky and engine is preferred)

                if not room() or image in engine.refused or not await engine.endpoint.ping():
                    continue
                # Asked again after the awaits, with none before taking it: another sandbox may have taken it.
                if engine.endpoint.usable and await self._has_image(engine, image) and room():
                    engine.used += 1
                    return engine
            if any(e.endpoint.usable and image not in e.refused for e in candidates):
                waited_since = time.monotonic()  # one answers: wait for its slot, however long
            elif time.monotonic() - waited_since > ENGINE_WAIT or not candidates:
                why = "; ".join(
                    f"{e.url}: {e.refused.get(image) or e.endpoint.detail or 'no answer'}" for e in self.engines
                )
                kind: InfraKind = "engine_error" if all(image in e.refused for e in self.engines) else "sandbox_lost"
                if only:
                    why = (
                        f"{preferred.url} holds its only current workspace (no snapshot of its last tested "
                        f"attempt) and does not answer: {preferred.endpoint.detail or 'no answer'}"
                    )
                raise SandboxError(f"no engine can take the sandbox ({why})", kind)
            with anyio.move_on_after(1.0):  # a slot freed, or time to ask the engines again
                await self._freed.wait()

    def release(self, engine: _Engine) -> None:
        engine.used = max(0, engine.used - 1)
        self._freed.set()
        self._freed = anyio.Event()

    async def _has_image(self, engine: _Engine, image: str) -> bool:
        """Copy the image there from the local engine unless it holds it (by ID); False if it cannot be."""
        if image in engine.images:
            return True
        async with engine.image_lock:
            if image in engine.images:
                return True
            if engine.url != self.source.url:
                try:
                    await distribute(self.source.client(), engine.endpoint.client(), image, engine.url)
                except DistributionError as exc:
                    if exc.transient:  # the engine or the link failed this time: not put there now, asked again later
                        engine.endpoint.suspect(str(exc))
                    else:
                        engine.refused[image] = str(exc)
                    return False
            engine.images.add(image)
            return True

    # --- the factory --------------------------------------------------------------------------

    def __call__(self, root: Path, label: str, grant: Grant = Grant()) -> PlacedSandbox[_Engine]:  # noqa: B008 - frozen
        return PlacedSandbox(self, root, label, grant)

    async def llm_hosts(self) -> list[str]:
        """The gateway's addresses: each engine's `gateway`, else the bridge of an engine on this machine.

        An engine elsewhere with no `gateway` is refused in one line: its containers could not reach the
        model, so every attempt of a real harness there would fail for the platform's reason."""
        hosts: list[str] = []
        for e in self.engines:
            if e.endpoint.spec.gateway is None and e.endpoint.host != "127.0.0.1":
                raise UsageError(
                    f"engine {e.url} is on another host, so its containers cannot reach the LLM gateway: give its "
                    'entry gateway = "<an IPv4 address of this host that it can reach>" (--engine URL,gateway=IP)'
                )
            if e.endpoint.spec.gateway is not None or await e.endpoint.ping():
                hosts += [h for h in await e.factory.llm_hosts() if h not in hosts]
        return hosts

    def llm_serving(self, port: int) -> None:
        for e in self.engines:
            e.factory.llm_serving(port)

    async def aclose(self, sandboxes: Path) -> None:
        """Reap the sweep on every engine that answers; close the connections (and SSH tunnels)."""
        for e in self.engines:
            if await e.endpoint.ping():
                with contextlib.suppress(Exception), anyio.move_on_after(CLOSE_TIMEOUT * 4):
                    await e.factory.aclose(sandboxes)
            await e.endpoint.aclose()
        await self.source.aclose()

    async def disconnect(self) -> None:
        """Close every connection (and SSH tunnel), leaving the sandboxes running (a graceful daemon stop)."""
        for e in self.engines:
            disconnect = getattr(e.factory, "disconnect", None)
            if disconnect is not None:
                await disconnect()
            await e.endpoint.aclose()
        await self.source.aclose()

    def status(self) -> list[EngineStatus]:
        out = []
        for e in self.engines:
            watch = watches_by_url().get(e.url)
            out.append(
                EngineStatus(
                    url=e.url,
                    slots=e.endpoint.spec.slots,
                    used=e.used,
                    healthy=e.endpoint.healthy and not (watch is not None and watch.down),
                    detail=(watch.detail if watch is not None and watch.down else "") or e.endpoint.detail,
                    scenarios=sum(url == e.url for url in self.placed.values()),
                    down_since=watch.down_since if watch is not None else 0.0,
                    waiting=watch.waiting if watch is not None else 0,
                )
            )
        return out


__all__ = ["PLACEMENT", "EnginePool", "EngineStatus", "PlacedSandbox", "Slots", "volume_on"]
