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
    NotReady,
    Sandbox,
    SandboxError,
    SandboxFactory,
    ServerHandle,
    Snapshot,
)
from staminad.sandbox.distribute import DistributionError, distribute
from staminad.sandbox.endpoint import PING_EVERY, Endpoint, local_socket
from staminad.sandbox.enginespec import EngineSpec
from staminad.sandbox.markers import Marker, MarkerWatcher

T = TypeVar("T")
PLACEMENT = "engine.json"  # in the sandbox directory: the engine the scenario was last placed on
SNAPSHOT = Path("snapshots") / "workspace.tar.gz"  # the volume runtime's last workspace snapshot
CURRENT = "snapshot.json"  # in the sandbox directory: whether that snapshot is of the last tested attempt
ENGINE_WAIT = 60.0  # seconds a sandbox waits for any engine to answer before its attempt is an infra retry
CLOSE_TIMEOUT = 30.0  # bound on removing a sandbox from an engine that answers


class EngineStatus(msgspec.Struct, frozen=True, kw_only=True):
    """One engine as the pool sees it (for `staminad status` and the TUI)."""

    url: str
    slots: int
    used: int  # slots held, by every sweep of the daemon sharing the engine
    healthy: bool
    detail: str = ""
    scenarios: int = 0  # of this pool's sweep, holding a slot there now


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
        before = self.engine(_read_placement(root))
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
                kind = "engine_error" if all(image in e.refused for e in self.engines) else "sandbox_lost"
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
                scenarios=sum(url == e.url for url in self.placed.values()),
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


def _current(root: Path) -> bool:
    """Whether the last snapshot is of the scenario's last tested attempt, or no attempt was tested yet.

    Unset when a test starts, set when the snapshot after it is taken whole: a loss between the two (or a
    snapshot skipped as too large, or failed) leaves the newest workspace on its engine alone.
    """
    try:
        return bool(json.loads((root / CURRENT).read_text())["current"])
    except FileNotFoundError:
        return True
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _set_current(root: Path, current: bool) -> None:
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{CURRENT}.new"
    tmp.write_text(json.dumps({"current": current}))
    tmp.replace(root / CURRENT)


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

    @llm_host.setter
    def llm_host(self, host: str) -> None:
        self.inner.llm_host = host

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
        """Run one operation of the inner sandbox, its engine pinged every PING_EVERY meanwhile: an engine that
        stops answering ends it at once as `sandbox_lost` (not at the operation's own, longer, bound), and so
        does whatever it raises while the engine does not answer. An unexpected error of the client library
        (a connection that went away under it) is an `engine_error`; the agent's `NotReady` and the sandbox's
        own judgements pass as they are."""
        if await self._down():
            raise self._lost()
        endpoint = self.engine.endpoint
        done: list[tuple[T | None, BaseException | None]] = []

        async def watch(scope: anyio.CancelScope) -> None:
            while await endpoint.ping():
                await anyio.sleep(PING_EVERY)  # the next health check of the engine, not a synchronisation
            scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch, tg.cancel_scope)
            try:
                done.append((await op(), None))
            except Exception as exc:
                done.append((None, exc))
            tg.cancel_scope.cancel()
        if not done:  # the watch cancelled it: the engine stopped answering
            raise self._lost()
        result, error = done[0]
        if error is None:
            return result  # type: ignore[return-value]  # T itself, which may include None
        if isinstance(error, NotReady) or (isinstance(error, SandboxError) and error.kind != "engine_error"):
            raise error
        endpoint.mark_down(f"{type(error).__name__}: {error}")
        if await self._down():
            raise self._lost() from None
        if isinstance(error, SandboxError):
            raise error
        raise SandboxError(f"engine {self.engine.url}: {type(error).__name__}: {error}", "engine_error") from error

    async def prepare(self) -> None:
        """Take a slot (on the engine of before while it answers) and make the sandbox there; on a new engine the
        last snapshot goes into its fresh volumes. An engine that fails to make it is left for another."""
        if self.holding:
            await self._guard(self.inner.prepare)
            return
        placed, snapshot = _read_placement(self.root), self.root / SNAPSHOT
        # It may move only when what the other engine gets is its workspace as of its last tested attempt.
        home = self.pool.engine(placed)
        only = home is not None and not _current(self.root)
        if only and home is not None and home is not self.engine:
            self.engine, self.inner = home, home.factory(self.root, self.label, self.grant)
        tried: tuple[_Engine, ...] = ()
        while True:
            sticky = placed == self.engine.url
            engine = await self.pool.acquire(self.engine, self.image, sticky=sticky, tried=tried, only=only)
            self.holding = True
            if engine is not self.engine:
                self.engine, self.inner = engine, engine.factory(self.root, self.label, self.grant)
            _write_placement(self.root, engine.url)
            self.pool.placed[self.label] = engine.url
            try:
                await self._guard(self.inner.prepare)
                if placed not in ("", engine.url) and snapshot.exists():
                    await self._guard(lambda: self.inner.restore(snapshot))
                return
            except SandboxError as exc:
                if exc.kind == "port_taken" or only or len(tried) + 1 >= len(self.pool.engines):
                    raise
                engine.endpoint.suspect(str(exc))
                self.holding = False
                self.pool.release(engine)
                self.pool.placed.pop(self.label, None)
                tried = (*tried, engine)

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

    async def snapshot(self, limit: int = SNAPSHOT_LIMIT) -> Snapshot | None:
        """The inner sandbox's snapshot; one taken whole makes the scenario movable again (see `_current`)."""
        snap = await self._guard(lambda: self.inner.snapshot(limit))
        if snap is not None and snap.size is not None and not snap.skipped:
            _set_current(self.root, True)
        return snap

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
        try:
            return await self._guard(lambda: self.inner.health(since))
        except SandboxError as exc:
            if exc.kind == "sandbox_lost":
                return Loss(kind=exc.kind, detail=str(exc))
            raise

    async def start_server(self, timeout: float, request_timeout: float = 5.0) -> ServerHandle:
        _set_current(self.root, False)  # an attempt is being tested: its snapshot is not taken yet
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
                self.pool.placed.pop(self.label, None)


__all__ = ["EnginePool", "EngineStatus", "PlacedSandbox", "Slots", "volume_on"]
