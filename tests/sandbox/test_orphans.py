"""Which state directory owns a sandbox, judged from its labels and the owning store under its lock (no engine)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from protocol import SandboxInfo
from staminad.sandbox.docker.container import (
    LABEL_HOST,
    LABEL_SANDBOXES,
    LABEL_SCENARIO,
    LABEL_SWEEP,
    host_id,
    ownership,
)
from staminad.sandbox.docker.orphans import _info, judged
from state.lock import lock_state_dir
from state.store import Store

pytestmark = pytest.mark.anyio
LOCAL = "unix:///var/run/docker.sock"


async def _state(path: Path, sweeps: dict[str, tuple[str, dict[int, str]]]) -> Path:
    """A state directory whose store holds `sweeps`: name -> (status, seed -> scenario status), configuration `c`."""
    async with await Store.open(path / "staminad.db") as store:
        for name, (status, scenarios) in sweeps.items():
            await store.ensure_sweep(name, name, "fp", "{}")
            await store.set_sweep_status(name, status)  # type: ignore[arg-type]
            config = await store.ensure_configuration(name, "c", "reference", 0, "detailed")
            for seed, scenario_status in scenarios.items():
                row = await store.ensure_scenario(config, seed)
                await store.set_scenario_status(row.id, scenario_status)  # type: ignore[arg-type]
    return path.resolve()


def _sandbox(state: Path, sweep: str, seed: int, engine: str = LOCAL, host: str | None = None) -> SandboxInfo:
    """A container as the engine lists it, labelled as one of `state`'s scenarios of `sweep`."""
    labels = {LABEL_SWEEP: sweep, LABEL_SCENARIO: f"c/{seed}", LABEL_SANDBOXES: str(state / "sandboxes" / sweep)}
    labels |= ownership(state / "sandboxes" / sweep / f"c1-s{seed}")
    if host is not None:
        labels[LABEL_HOST] = host
    return _info(engine, "container", f"{state.name}-{sweep}-{seed}", labels, True)


def _verdicts(found: list[SandboxInfo], own: Path | None = None, release: tuple[Path, str] | None = None) -> list[str]:
    """Each sandbox's verdict: `orphan: why` or `kept: whose`."""
    with judged(found, own, release, lock=True) as out:
        return [f"orphan: {s.orphan}" if s.orphan else f"kept: {s.owner}" for s in out]


async def test_a_gone_state_directory_orphans_its_sandboxes_and_a_live_store_keeps_its_unfinished_ones(
    tmp_path: Path,
) -> None:
    """Gone dir: orphans; a running sweep's unfinished scenario: kept; finished sweep, done or unknown: orphans."""
    gone = await _state(tmp_path / "gone", {"s": ("running", {0: "running"})})
    shutil.rmtree(gone)
    live = await _state(
        tmp_path / "live", {"s": ("running", {0: "running", 1: "done"}), "f": ("finished", {0: "done"})}
    )
    found = [_sandbox(gone, "s", 0), _sandbox(live, "s", 0), _sandbox(live, "s", 1), _sandbox(live, "f", 0)]
    found.append(_sandbox(live, "x", 0))
    verdicts = _verdicts(found)
    assert verdicts[0] == f"orphan: its state directory {gone} is gone"
    assert verdicts[1].startswith("kept: sweep s (running)")
    assert verdicts[2] == "orphan: its scenario c/1 of sweep s is finished or unknown"
    assert verdicts[3] == "orphan: its sweep f is finished"
    assert verdicts[4] == f"orphan: its store {live / 'staminad.db'} has no sweep x"


async def test_a_state_directory_in_use_another_machines_or_without_a_store_is_never_judged(tmp_path: Path) -> None:
    """Another process's lock, another host's label, an engine elsewhere unlabelled, or no store: kept as they are."""
    busy = await _state(tmp_path / "busy", {"f": ("finished", {0: "done"})})
    fd = lock_state_dir(busy, "busy", "daemon")  # a live daemon's (another open file: flock locks are per open)
    bare = (tmp_path / "bare").resolve()
    bare.mkdir()
    try:
        gone = tmp_path / "never-made"
        found = [_sandbox(busy, "f", 0), _sandbox(gone, "s", 0, host="elsewhere/1234"), _sandbox(bare, "s", 0)]
        unlabelled = _sandbox(gone, "s", 1, engine="tcp://10.0.0.2:2376")
        old = {LABEL_SWEEP: "s", LABEL_SCENARIO: "c/1", LABEL_SANDBOXES: str(gone / "sandboxes" / "s")}
        found += [unlabelled, _info("tcp://10.0.0.2:2376", "volume", "v", old, False)]
        verdicts = _verdicts(found)
    finally:
        os.close(fd)
    assert verdicts[0] == f"kept: its state directory {busy} is in use (a daemon, pid {os.getpid()})"
    assert verdicts[1] == "kept: a state directory on elsewhere/1234"
    assert verdicts[2] == f"kept: state directory {bare} holds no store"
    assert verdicts[3] == "orphan: its state directory " + str(gone) + " is gone"  # labelled with this machine
    assert verdicts[4] == "kept: made before sandboxes named their machine, on an engine elsewhere"
    assert host_id() and _verdicts([_sandbox(busy, "f", 0)], own=busy)[0] == "orphan: its sweep f is finished"


async def test_a_released_sweep_is_pruned_only_while_no_process_uses_its_state_directory(tmp_path: Path) -> None:
    """`--prune --sweep` orphans a kept sweep's sandboxes, unless a daemon or run holds the directory's lock."""
    state = await _state(tmp_path / "st", {"s": ("running", {0: "running"})})
    found = [_sandbox(state, "s", 0)]
    assert _verdicts(found, release=(state, "s")) == [f"orphan: its sweep s of {state} was released (--sweep s)"]
    fd = lock_state_dir(state, "busy", "run")
    try:
        assert _verdicts(found, release=(state, "s"))[0].startswith("kept: its state directory")
    finally:
        os.close(fd)
