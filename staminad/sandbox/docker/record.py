"""The engine's own record of a sealed container, which nothing inside it can write: whether it was lost or paused
from outside (`health`, `frozen`), and whether its own processes hold its limits (`exhausted`).

A container is lost only on the engine's own record of something done to *this* container from outside:
its events are asked for by the container's id, never by its name, which the container it replaced had
too (so removing that one on a loss is never this one's loss), and a container running as it was when we
started it (its id and start time, `own`) is not restarted, however recently that was.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

import aiodocker
import aiohttp
import anyio

from staminad.sandbox.base import Loss
from staminad.sandbox.docker.container import EVENT_SETTLE, EVENTS, OP_TIMEOUT, OUTPUT_LIMIT, _started, judge

PIDS_SPARE = 8  # a container this close to its pid limit is full: the engine's own exec needs a few
MEMORY_FULL = 0.95  # share of the memory limit in use that counts as full


class EngineRecord:
    """What the engine records of one container (`engineside.EngineContainer` is one): its name, its client and
    how it is looked up are the container's."""

    docker: aiodocker.Docker
    name: str
    _own: tuple[str, str]  # (id, StartedAt) of the container as we last started or adopted it (see `own`)

    async def _container(self) -> Any:
        raise NotImplementedError

    def own_nothing(self) -> None:
        """No container is ours yet (before the first `prepare`)."""
        self._own = ("", "")

    def own(self, info: dict[str, Any]) -> None:
        """Remember the container (its engine-side inspection, `info`) as we started or adopted it: running with
        this id and start time, it is the container we made ready, whatever happened to the one before it."""
        self._own = (str(info.get("Id", "")), str((info.get("State") or {}).get("StartedAt", "")))

    async def own_current(self) -> None:
        """`own` the container the engine has under our name now (just started, or adopted running)."""
        container = await self._container()
        if container is not None:
            self.own(container._container)

    async def health(self, since: float) -> Loss | None:
        """None while the container runs; else why not (see `judge`)."""
        container = await self._container()
        if container is None:
            return Loss(kind="sandbox_lost", detail=f"container {self.name} was removed")
        info = container._container
        state = info.get("State") or {}
        if state.get("Paused"):
            return Loss(kind="sandbox_lost", detail=f"container {self.name} is paused", paused=True)
        if state.get("Running") and (
            _started(state.get("StartedAt", "")) <= since or (info.get("Id"), state.get("StartedAt")) == self._own
        ):
            return None
        cid = str(info.get("Id", ""))
        actions = await self._actions(since, cid)
        if actions is not None and "die" not in actions and not state.get("Running"):
            # The engine logs `die` as it marks the container stopped: a state read in between sees no event yet.
            await anyio.sleep(EVENT_SETTLE)
            actions = await self._actions(since, cid)
        return judge(self.name, state, actions)

    async def frozen(self, since: float) -> str:
        """Why the container was paused from outside since `since` ("" if it was not, or the engine cannot say).

        A pause that ends within a suite leaves it running, so `health` sees nothing; requests that timed out
        meanwhile are the platform's doing, never the server's: the engine's event log says so.
        """
        container = await self._container()
        actions = await self._actions(since, container.id) if container is not None else None
        if actions is not None and "pause" in actions:
            return f"container {self.name} was paused from outside"
        return ""

    async def _actions(self, since: float, cid: str) -> set[str] | None:
        """The engine's lifecycle events since `since` for the container of id `cid` (see `EVENTS`), never for
        one it replaced under the same name; None if unknown."""
        if not cid:
            return None
        params = {
            "since": f"{since - 1:.0f}",
            "until": f"{time.time() + 1:.0f}",
            "filters": json.dumps({"container": [cid], "type": ["container"]}),
        }
        try:
            with anyio.fail_after(OP_TIMEOUT):
                async with self.docker._query("events", params=params) as response:
                    # The engine streams one event per chunk until `until`: read to the end (bounded), since a
                    # single read returns only the first chunk (often an exec event, not the kill).
                    data = bytearray()
                    while len(data) < OUTPUT_LIMIT and (chunk := await response.content.read(OUTPUT_LIMIT)):
                        data += chunk
                    text = bytes(data[:OUTPUT_LIMIT]).decode("utf-8", "replace")
        except (aiodocker.exceptions.DockerError, TimeoutError, aiohttp.ClientError, OSError):
            return None
        actions = set()
        for line in text.splitlines():
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                event = json.loads(line)
                # This container's own, by its full id (a filter by id matches a prefix, as one by name does).
                if (event.get("Actor") or {}).get("ID", event.get("id")) != cid:
                    continue
                action = str(event.get("Action", "")).split(":")[0]
                if action in EVENTS:
                    actions.add(action)
        return actions

    async def exhausted(self) -> str:
        """Why the container cannot run more of anything by its own contents' doing (its pid limit or memory held),
        or "" when it is not so: the engine's own statistics, which the agent cannot write."""
        container = await self._container()
        if container is None:
            return ""
        try:
            with anyio.fail_after(OP_TIMEOUT):
                stats = await container.stats(stream=False)
        except (aiodocker.exceptions.DockerError, TimeoutError, aiohttp.ClientError, OSError):
            return ""
        stat = stats[0] if isinstance(stats, list) and stats else stats
        if not isinstance(stat, dict):
            return ""
        pids = stat.get("pids_stats") or {}
        current, limit = int(pids.get("current") or 0), int(pids.get("limit") or 0)
        if limit and current >= limit - PIDS_SPARE:
            return f"the sandbox's process limit was exhausted ({current} of {limit} processes)"
        memory = stat.get("memory_stats") or {}
        detail = memory.get("stats") or {}
        cache = int(detail.get("inactive_file", detail.get("total_inactive_file", 0)) or 0)  # reclaimable: not held
        used, cap = int(memory.get("usage") or 0) - cache, int(memory.get("limit") or 0)
        if cap and used >= cap * MEMORY_FULL:
            return f"the sandbox's memory limit was exhausted ({used >> 20} of {cap >> 20} MiB)"
        return ""
