"""A full state disk pauses the sweeps whose writes it refuses, with the reason in status; the daemon answers
meanwhile, and once space returns the sweeps resume by themselves and end as an undisturbed run ends.

The state directory is a small tmpfs (we mount it: root only). Its `sandboxes/` is a link to the ordinary disk,
so what fills is what the store and the log write, as on a box whose state disk (not the sandboxes') fills. Both
sweeps write to the one store on that tmpfs, so both pause: a sweep keeps running only while its writes succeed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol import GetSweep, ListScenarios, ScenarioList, SweepInfo
from state.space import DiskWatch
from tests.helpers.inprocess import events, request, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]

TMPFS = "8m"


@contextlib.contextmanager
def tmpfs(path: Path) -> Iterator[Path]:
    """A `TMPFS`-sized tmpfs mounted at `path` for the block (unmounted after, lazily if still busy)."""
    path.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        if subprocess.run(["umount", str(path)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], check=False)


def fill(path: Path) -> int:
    """Write zeros to `path` until the disk refuses with ENOSPC; the bytes written."""
    written = 0
    with path.open("wb", buffering=0) as f:
        for chunk in (1 << 20, 4096, 512):
            block = bytes(chunk)
            while True:
                try:
                    written += f.write(block) or 0
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    return written


def sweeps(tmp: Path) -> list[Path]:
    return [
        write_sweep(tmp, "diskA", ["reference", "mutant:accept-null"], seeds="0-1", turns=3),
        write_sweep(tmp, "diskB", ["reference"], seeds="0", turns=3),
    ]


async def outcome(state: Path, name: str) -> list[tuple[str, int, str, int, str]]:
    listed = await request(state, ListScenarios(sweep=name))
    assert isinstance(listed, ScenarioList)
    return sorted((r.configuration, r.seed, r.status, r.turns_passed, r.history) for r in listed.scenarios)


async def run_to_end(state: Path, files: list[Path], on_first_harness: Any = None) -> dict[str, list[Any]]:
    """Submit both sweeps to a daemon on `state`, wait for both to finish, and return their scenarios' ends."""
    async with running_daemon(state) as daemon, events(state) as stream:
        for f in files:
            await submit(state, f)
        if on_first_harness is not None:
            await until(stream, "harness_done")
            await on_first_harness(daemon)
        finished: set[str] = set()
        with anyio.fail_after(300):
            while finished != {"diskA", "diskB"}:
                event = await until(stream, "sweep_finished")
                finished.add(event.sweep)
        return {name: await outcome(state, name) for name in ("diskA", "diskB")}


async def test_a_full_state_disk_pauses_the_sweep_and_it_resumes_when_space_returns(tmp_path: Path) -> None:
    """A full state disk pauses the sweep with its reason; freed, every scenario ends as undisturbed."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs state directory needs root")
    files = sweeps(tmp_path)
    undisturbed = await run_to_end(tmp_path / "plain", files)
    seen: dict[str, str] = {}

    async def fill_and_free(daemon: Any) -> None:
        filler = state / "filler"
        await anyio.to_thread.run_sync(fill, filler)
        with anyio.fail_after(120):  # the next write of the sweep meets the full disk: it pauses, saying why
            while True:
                info = await request(state, GetSweep(sweep="diskA"))  # the daemon answers meanwhile
                assert isinstance(info, SweepInfo)
                if info.status == "paused" and info.reason:
                    seen["status"], seen["reason"] = info.status, info.reason
                    break
                await anyio.sleep(0.1)
        assert daemon.store.space.stalls >= 1
        filler.unlink()  # space returns: nothing else is done to resume

    with tmpfs(tmp_path / "st") as state:
        (tmp_path / "sandboxes").mkdir()
        (state / "sandboxes").symlink_to(tmp_path / "sandboxes")
        disturbed = await run_to_end(state, files, fill_and_free)
    assert seen["status"] == "paused"
    assert seen["reason"].startswith("state disk full: ") and "resumes by itself once space returns" in seen["reason"]
    assert "aside" not in seen["reason"]
    assert disturbed == undisturbed
    assert all(status == "done" for _, _, status, _, _ in disturbed["diskB"])


def test_the_disk_watch_reads_a_full_disk_as_not_ready(tmp_path: Path) -> None:
    """A watch asking for more free bytes than the disk has is not ready; one asking for none is."""
    assert DiskWatch(tmp_path, min_free=0).ready()
    assert not DiskWatch(tmp_path, min_free=1 << 62).ready()
