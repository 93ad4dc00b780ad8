"""A scenario's sandbox in a sweep over several engines: on whichever engine of the pool holds it now.

It takes a slot when prepared and gives it back when closed, and wraps every operation of the engine's own
(volume) sandbox so that an engine that stops answering ends it as `sandbox_lost` (see `engines`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import anyio

from staminad.sandbox.base import (
    SNAPSHOT_LIMIT,
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
from staminad.sandbox.docker.engineconnect import PING_EVERY, Endpoint
from staminad.sandbox.docker.placementfiles import current, read_placement, set_current, write_placement
from staminad.sandbox.markers import Marker, MarkerWatcher
from staminad.sandbox.outage import EngineWatch
from staminad.sandbox.settings import ContainerSettings


class EngineLike(Protocol):
    """One engine of the pool, as a placed sandbox sees it (`engines._Engine` has these)."""

    @property
    def url(self) -> str: ...
    @property
    def endpoint(self) -> Endpoint: ...
    @property
    def factory(self) -> SandboxFactory: ...


E = TypeVar("E", bound=EngineLike)


class PoolLike(Protocol[E]):
    """The pool a placed sandbox takes its slot from (`engines.EnginePool`; typed here so neither module
    imports the other's)."""

    @property
    def run(self) -> ContainerSettings: ...
    @property
    def engines(self) -> Sequence[E]: ...
    @property
    def placed(self) -> dict[str, str]: ...
    def engine(self, url: str) -> E | None: ...
    def provisional(self, root: Path) -> E: ...
    async def acquire(
        self, preferred: E, image: str, sticky: bool = ..., tried: tuple[E, ...] = ..., only: bool = ...
    ) -> E: ...
    def release(self, engine: E) -> None: ...


T = TypeVar("T")
CLOSE_TIMEOUT = 30.0  # bound on removing a sandbox from an engine that answers
ERROR_GRACE = 5.0  # seconds an engine that failed an operation is watched for going away (see `_guard`)


class PlacedSandbox(Generic[E]):
    """A scenario's sandbox on whichever engine of the pool holds it now (see the module docstring)."""

    def __init__(self, pool: PoolLike[E], root: Path, label: str, grant: Grant) -> None:
        self.pool, self.root, self.label, self.grant = pool, root, label, grant
        self.image = grant.image or pool.run.image
        self.engine = pool.provisional(root)
        self.inner: Sandbox = self.engine.factory(root, label, grant)
        self.paths = self.inner.paths
        self.holding = False  # whether this sandbox holds a slot on `engine`
        # Engines that did not answer when this sandbox's container there was to be removed: it may still run
        # the last harness, so it is removed (volumes kept) before the sandbox is made on that engine again.
        self.left_on: set[str] = set()

    @property
    def llm_host(self) -> str:
        return self.inner.llm_host

    @llm_host.setter
    def llm_host(self, host: str) -> None:
        self.inner.llm_host = host

    @property
    def host_files(self) -> HostView | None:
        return self.inner.host_files

    @property
    def restored(self) -> bool:
        return self.inner.restored

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "engine": self.engine.url}

    def watch(self) -> EngineWatch | None:
        """Its engine's outage watch when it has to wait for that engine: its workspace is there alone (no
        snapshot of its last tested attempt) or no other engine answers. None when it may move: its retry
        takes it to an engine that answers (see `engines`)."""
        others = any(e is not self.engine and e.endpoint.usable for e in self.pool.engines)
        return None if others and current(self.root) else self.engine.endpoint.watch()

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
            while await endpoint.ping():  # noqa: ASYNC110 - a periodic health check of the engine, not a wait for a flag
                await anyio.sleep(PING_EVERY)
            scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch, tg.cancel_scope)
            try:
                done.append((await op(), None))
            except Exception as exc:  # noqa: BLE001 - carried back to the caller, which raises it
                done.append((None, exc))
            tg.cancel_scope.cancel()
        if not done:  # the watch cancelled it: the engine stopped answering
            raise self._lost()
        result, error = done[0]
        if error is None:
            return result  # type: ignore[return-value]  # T itself, which may include None
        if isinstance(error, NotReady) or (isinstance(error, SandboxError) and error.kind != "engine_error"):
            raise error
        # An engine that fails an operation and stops answering soon after (one shutting down refuses work
        # before its API goes) has been lost: asked again for a few seconds before it counts as its error.
        with anyio.move_on_after(ERROR_GRACE):
            while True:
                endpoint.mark_down(f"{type(error).__name__}: {error}")
                if await self._down():
                    raise self._lost() from None
                await anyio.sleep(1.0)  # the next ping of the engine, not a synchronisation
        if isinstance(error, SandboxError):
            raise error
        raise SandboxError(f"engine {self.engine.url}: {type(error).__name__}: {error}", "engine_error") from error

    async def prepare(self) -> None:
        """Take a slot (on the engine of before while it answers) and make the sandbox there; on a new engine the
        last snapshot goes into its fresh volumes. An engine that fails to make it is left for another."""
        if self.holding:
            await self._remove_left_behind()
            await self._guard(self.inner.prepare)
            return
        placed = read_placement(self.root)
        # It may move only when what the other engine gets is its workspace as of its last tested attempt.
        home = self.pool.engine(placed)
        only = home is not None and not current(self.root)
        if only and home is not None and home is not self.engine:
            self.engine, self.inner = home, home.factory(self.root, self.label, self.grant)
        tried: tuple[E, ...] = ()
        while True:
            sticky = placed == self.engine.url
            engine = await self.pool.acquire(self.engine, self.image, sticky=sticky, tried=tried, only=only)
            self.holding = True
            if engine is not self.engine:
                self.engine, self.inner = engine, engine.factory(self.root, self.label, self.grant)
            write_placement(self.root, engine.url)
            self.pool.placed[self.label] = engine.url
            try:
                await self._remove_left_behind()
                await self._guard(self.inner.prepare)  # fresh volumes (a move) get the last snapshot back
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
            set_current(self.root, True)
        return snap

    async def restore(self, src: Path) -> None:
        await self._guard(lambda: self.inner.restore(src))

    async def keep_code(self, job_id: str) -> None:
        await self.inner.keep_code(job_id)  # from the snapshot on this disk: the engine is not asked

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

    async def frozen(self, since: float) -> str:
        return await self._guard(lambda: self.inner.frozen(since))

    async def start_server(self, timeout: float, request_timeout: float = 5.0) -> ServerHandle:
        set_current(self.root, False)  # an attempt is being tested: its snapshot is not taken yet
        return await self._guard(lambda: self.inner.start_server(timeout, request_timeout))

    async def stop_server(self, handle: ServerHandle) -> None:
        await self._guard(lambda: self.inner.stop_server(handle))

    async def _remove_left_behind(self) -> None:
        if self.engine.url in self.left_on:
            with anyio.move_on_after(CLOSE_TIMEOUT):
                await self._guard(self.inner.close)  # the same container name on that engine
                self.left_on.discard(self.engine.url)

    async def close(self) -> None:
        """Remove the sandbox from its engine if that answers, asked afresh (else leave it: `left_on`), and give
        the slot back."""
        try:
            if not await self.engine.endpoint.ping(fresh=True):  # no cached answer: a stale one leaves a harness
                self.left_on.add(self.engine.url)
            else:
                with anyio.move_on_after(CLOSE_TIMEOUT) as late:
                    await self.inner.close()
                if late.cancelled_caught:
                    self.left_on.add(self.engine.url)
        finally:
            if self.holding:
                self.holding = False
                self.pool.release(self.engine)
                self.pool.placed.pop(self.label, None)


__all__ = ["PlacedSandbox"]
