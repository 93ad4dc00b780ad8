"""A sweep spread over several Docker engines: each scenario placed on an engine with a free slot, kept there.

`EnginePool` is a `SandboxFactory` over one factory per engine (volume sandboxes: nothing is shared
with the daemon's disk). A scenario's sandbox (`PlacedSandbox`) takes a slot on an engine when it is
prepared and gives it back when it is closed; the pool's capacity is the sum of the slots, and the
sweep's `parallel` and the daemon's limit apply on top. Where a scenario is placed is written to
`<sandbox>/engine.json` on the daemon's disk, so after a restart (kill -9 included) it goes back to
the same engine and adopts its running container there.

An engine is healthy while it answers a bounded `/_ping` (asked at most every few seconds, by the
sandboxes' own health checks, which the engine polls every couple of seconds while a harness runs).
When it stops answering, every operation of its sandboxes ends as `sandbox_lost`: an infra retry,
never scored, R untouched. The retry's `prepare` places the scenario on another healthy engine,
puts the last workspace snapshot (taken after every tested attempt) into its fresh volumes and
carries on from there; what the lost attempt had done since is redone. A sandbox of an engine that
does not answer is dropped without a word to it; the sweep's end reaps whatever of it that engine
still holds if it answers again by then.

Images go to an engine from the local one (`distribute`) before its first sandbox there, once per
image, checked by content hash.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import msgspec

from staminad.sandbox.base import (
    SNAPSHOT_LIMIT,
    ContainerSettings,
    Grant,
    HostView,
    JobState,
    Loss,
    Sandbox,
    SandboxError,
    SandboxFactory,
    ServerHandle,
    Snapshot,
)
from staminad.sandbox.distribute import DistributionError, distribute
from staminad.sandbox.endpoint import Endpoint, EngineSpec, local_socket
from staminad.sandbox.markers import Marker, MarkerWatcher

T = TypeVar("T")
PLACEMENT = "engine.json"  # in the sandbox directory: the engine the scenario was last placed on
SNAPSHOT = Path("snapshots") / "workspace.tar.gz"  # the volume runtime's last workspace snapshot
ENGINE_WAIT = 60.0  # seconds a sandbox waits for any engine to answer before its attempt is an infra retry
CLOSE_TIMEOUT = 30.0  # bound on removing a sandbox from an engine that answers


class EngineStatus(msgspec.Struct, frozen=True, kw_only=True):
    """One engine as the pool sees it (for `staminad status` and the TUI)."""

    url: str
    slots: int
    used: int
    healthy: bool
    detail: str = ""


class _Engine:
    """An endpoint with its slots and the factory making sandboxes there."""

    def __init__(self, endpoint: Endpoint, factory: SandboxFactory) -> None:
        self.endpoint, self.factory = endpoint, factory
        self.used = 0
        self.images: set[str] = set()  # images known to be there (distributed or found)
        self.refused: dict[str, str] = {}  # image -> why it cannot be put there
        self.image_lock = anyio.Lock()

    @property
    def url(self) -> str:
        return self.endpoint.url

    @property
    def free(self) -> int:
        return self.endpoint.spec.slots - self.used


def volume_on(run: ContainerSettings) -> Callable[[Endpoint], SandboxFactory]:
    """Volume sandboxes on an endpoint: published on loopback for a local engine, on every address elsewhere."""

    def make(endpoint: Endpoint) -> SandboxFactory:
        from staminad.sandbox.volume import volume_factory

        publish = "127.0.0.1" if endpoint.host in ("127.0.0.1", "localhost", "::1") else "0.0.0.0"
        return volume_factory(run, endpoint.connect, publish, endpoint.host)

    return make


class EnginePool:
    """The `SandboxFactory` of a sweep over several engines (see the module docstring)."""

    def __init__(
        self,
        run: ContainerSettings,
        specs: list[EngineSpec],
        make: Callable[[Endpoint], SandboxFactory] | None = None,
        source: str | None = None,
    ) -> None:
        make = make or volume_on(run)
        self.run = run
        self.engines = [_Engine(e, make(e)) for e in (Endpoint(s) for s in specs)]
        self.source = Endpoint(EngineSpec(url=source or local_socket()))  # where the images are built
        self.placed: dict[str, str] = {}  # scenario label -> engine url, for the views
        self._freed = anyio.Event()

    # --- placement ----------------------------------------------------------------------------

    def engine(self, url: str) -> _Engine | None:
        return next((e for e in self.engines if e.url == url), None)

    def provisional(self, root: Path) -> _Engine:
        """The engine a new sandbox starts out on: where it was placed before, else the one with most room."""
        before = self.engine(_read_placement(root))
        if before is not None and before.endpoint.healthy:
            return before
        return max(self.engines, key=lambda e: (e.endpoint.healthy, e.free))

    async def acquire(self, preferred: _Engine, image: str, sticky: bool = False) -> _Engine:
        """A slot on `preferred` if it answers and has one (`sticky`: even if full, since the scenario's container
        is there already), else on the healthy engine with most room; waits for a slot to be freed, and up to
        ENGINE_WAIT for an engine to answer, else SandboxError."""
        waited_since = time.monotonic()
        while True:
            candidates = [preferred, *sorted((e for e in self.engines if e is not preferred), key=lambda e: -e.free)]
            answering = False
            for engine in candidates:
                room = engine.free > 0 or (sticky and engine is preferred)
                if not room or image in engine.refused or not await engine.endpoint.ping():
                    answering = answering or engine.endpoint.healthy
                    continue
                if await self._has_image(engine, image):
                    engine.used += 1
                    return engine
            answering = answering or any(e.endpoint.healthy for e in self.engines)
            if not answering and time.monotonic() - waited_since > ENGINE_WAIT:
                why = "; ".join(f"{e.url}: {e.endpoint.detail or 'no answer'}" for e in self.engines)
                raise SandboxError(f"no engine can take the sandbox ({why})", "sandbox_lost")
            if answering:
                waited_since = time.monotonic()
            if all(image in e.refused for e in self.engines):
                why = "; ".join(f"{e.url}: {e.refused[image]}" for e in self.engines)
                raise SandboxError(f"no engine can run {image} ({why})", "engine_error")
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
                    engine.refused[image] = str(exc)
                    return False
            engine.images.add(image)
            return True

    # --- the factory --------------------------------------------------------------------------

    def __call__(self, root: Path, label: str, grant: Grant = Grant()) -> PlacedSandbox:  # noqa: B008 - frozen
        return PlacedSandbox(self, root, label, grant)

    async def llm_hosts(self) -> list[str]:
        """The gateway's addresses for the engines on this machine (one elsewhere cannot reach it here)."""
        hosts: list[str] = []
        for e in self.engines:
            if e.endpoint.host == "127.0.0.1" and await e.endpoint.ping():
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

    def status(self) -> list[EngineStatus]:
        return [
            EngineStatus(
                url=e.url,
                slots=e.endpoint.spec.slots,
                used=e.used,
                healthy=e.endpoint.healthy,
                detail=e.endpoint.detail,
            )
            for e in self.engines
        ]


def _read_placement(root: Path) -> str:
    try:
        return str(json.loads((root / PLACEMENT).read_text())["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _write_placement(root: Path, url: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{PLACEMENT}.new"
    tmp.write_text(json.dumps({"url": url}))
    tmp.replace(root / PLACEMENT)


class PlacedSandbox:
    """A scenario's sandbox on whichever engine of the pool holds it now (see the module docstring)."""

    def __init__(self, pool: EnginePool, root: Path, label: str, grant: Grant) -> None:
        self.pool, self.root, self.label, self.grant = pool, root, label, grant
        self.image = grant.image or pool.run.image
        self.engine = pool.provisional(root)
        self.inner: Sandbox = self.engine.factory(root, label, grant)
        self.paths = self.inner.paths
        self.holding = False  # whether this sandbox holds a slot on `engine`

    @property
    def llm_host(self) -> str:
        return self.inner.llm_host

    @property
    def host_files(self) -> HostView | None:
        return self.inner.host_files

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "engine": self.engine.url}

    def _lost(self) -> SandboxError:
        detail = self.engine.endpoint.detail or "no answer"
        return SandboxError(f"engine {self.engine.url} stopped answering ({detail})", "sandbox_lost")

    async def _down(self) -> bool:
        return not await self.engine.endpoint.ping()

    async def _guard(self, op: Callable[[], Awaitable[T]]) -> T:
        """Run one operation of the inner sandbox; an engine failure while the engine is down is a loss."""
        if await self._down():
            raise self._lost()
        try:
            return await op()
        except SandboxError as exc:
            if exc.kind == "engine_error":
                self.engine.endpoint.mark_down(str(exc))
                if await self._down():
                    raise self._lost() from None
            raise

    async def prepare(self) -> None:
        """Take a slot (on the engine of before when it answers), and on a new engine restore the last snapshot."""
        if not self.holding:
            placed = _read_placement(self.root)
            engine = await self.pool.acquire(self.engine, self.image, sticky=placed == self.engine.url)
            self.holding = True
            if engine is not self.engine:
                self.engine, self.inner = engine, engine.factory(self.root, self.label, self.grant)
            moved = placed not in ("", engine.url)
            _write_placement(self.root, engine.url)
            self.pool.placed[self.label] = engine.url
            await self._guard(lambda: self.inner.prepare())
            snapshot = self.root / SNAPSHOT
            if moved and snapshot.exists():
                await self._guard(lambda: self.inner.restore(snapshot))
            return
        await self._guard(lambda: self.inner.prepare())

    async def seed(self, files: dict[str, str]) -> None:
        await self._guard(lambda: self.inner.seed(files))

    async def put_prompt(self, job_id: str, text: str) -> str:
        return await self._guard(lambda: self.inner.put_prompt(job_id, text))

    async def job_state(self, job_id: str) -> JobState:
        return await self._guard(lambda: self.inner.job_state(job_id))

    async def wait_marker(self, job_id: str, timeout: float, watcher: MarkerWatcher) -> Marker | None:
        return await self._guard(lambda: self.inner.wait_marker(job_id, timeout, watcher))

    async def count_loc(self) -> int:
        return await self._guard(self.inner.count_loc)

    async def server_log(self, limit: int) -> str:
        return await self._guard(lambda: self.inner.server_log(limit))

    async def snapshot(self, dest: Path, limit: int = SNAPSHOT_LIMIT) -> Snapshot | None:
        return await self._guard(lambda: self.inner.snapshot(dest, limit))

    async def restore(self, src: Path) -> None:
        await self._guard(lambda: self.inner.restore(src))

    async def launch(self, job_id: str, argv: list[str], env: dict[str, str]) -> None:
        await self._guard(lambda: self.inner.launch(job_id, argv, env))

    async def kill_job(self, job_id: str) -> None:
        await self._guard(lambda: self.inner.kill_job(job_id))

    async def job_alive(self, job_id: str) -> bool:
        return await self._guard(lambda: self.inner.job_alive(job_id))

    async def health(self, since: float) -> Loss | None:
        """The engine's loss when it stops answering, else the inner sandbox's own judgement."""
        if await self._down():
            return Loss(kind="sandbox_lost", detail=str(self._lost()))
        try:
            return await self.inner.health(since)
        except SandboxError as exc:
            if exc.kind != "engine_error":
                raise
            self.engine.endpoint.mark_down(str(exc))
            if await self._down():
                return Loss(kind="sandbox_lost", detail=str(self._lost()))
            raise

    async def start_server(self, timeout: float, request_timeout: float = 5.0) -> ServerHandle:
        return await self._guard(lambda: self.inner.start_server(timeout, request_timeout))

    async def stop_server(self, handle: ServerHandle) -> None:
        await self._guard(lambda: self.inner.stop_server(handle))

    async def close(self) -> None:
        """Remove the sandbox from its engine if that answers (else drop it), and give the slot back."""
        try:
            if not await self._down():
                with anyio.move_on_after(CLOSE_TIMEOUT):
                    await self.inner.close()
        finally:
            if self.holding:
                self.holding = False
                self.pool.release(self.engine)


def engine_pool(run: ContainerSettings, specs: list[EngineSpec]) -> EnginePool:
    return EnginePool(run, specs)


__all__ = ["EnginePool", "EngineStatus", "PlacedSandbox", "engine_pool", "volume_on"]
