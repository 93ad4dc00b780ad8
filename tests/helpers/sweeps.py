"""Sweeps for tests: sweep files, a runner that records the engine's events, and a real sweep run in-process."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from protocol.events import EventData
from staminad.engine.config import load_sweep
from staminad.engine.summary import ConfigSummary
from staminad.engine.sweep import run_sweep
from staminad.sandbox.base import SandboxFactory
from staminad.sandbox.local import local_factory
from staminad.sandbox.ports import PortAllocator
from tests.helpers.tiers import needs

E = TypeVar("E")


def write_sweep(
    tmp: Path,
    name: str,
    agents: list[str],
    *,
    seeds: str = "0",
    turns: int = 2,
    retries: int = 2,
    runtime: str = "local",
    extra: str = "",
    patient: bool = False,
) -> Path:
    """A sweep file of `agents` over `seeds`; `patient`: turn and server start timeouts long enough that a loaded
    machine (a parallel test run) never decides a verdict, for tests that compare the results of two runs."""
    turn_timeout, start_timeout = (120, 60) if patient else (20, 5)
    path = tmp / f"{name}.toml"
    path.write_text(
        textwrap.dedent(f"""
        name = "{name}"
        [scenarios]
        seeds = "{seeds}"
        turns = {turns}
        [matrix]
        agents = {agents!r}
        retries = [{retries}]
        [run]
        runtime = "{runtime}"
        parallel = 4
        turn_timeout = {turn_timeout}
        server_start_timeout = {start_timeout}
        infra_retries = 2
        """)
        + textwrap.dedent(extra)
    )
    return path


class Recorder:
    """The engine's events of one sweep, in order; each hook is called with every event as it comes."""

    def __init__(self) -> None:
        self.events: list[EventData] = []
        self.hooks: list[Callable[[EventData], None]] = []

    def __call__(self, data: EventData) -> None:
        self.events.append(data)
        for hook in self.hooks:
            hook(data)

    def kinds(self, kind: type[E]) -> list[E]:
        return [d for d in self.events if isinstance(d, kind)]


async def sweep(
    path: Path, state: Path, factory: SandboxFactory | None = None, recorder: Recorder | None = None
) -> dict[str, ConfigSummary]:
    """Run the sweep file at `path` to its end on `state` (local processes unless `factory` says otherwise)."""
    needs("sweep", "runs a sweep")
    sw, fp = load_sweep(path)
    summaries = await run_sweep(sw, fp, state, factory or local_factory(PortAllocator()), recorder or Recorder())
    return {s.name: s for s in summaries}
