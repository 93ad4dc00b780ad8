"""No sandbox outlives the state directory that owns it, on the real Docker engine.

A daemon killed mid-sweep whose state directory is then deleted leaves running containers: the next daemon
started anywhere removes them, a line each, while a neighbour daemon's live sandboxes stay. A `staminad run`
stopped by Ctrl-C keeps its sandboxes for a resume, says so, and `staminad sandboxes --prune --sweep` removes them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from staminad.sandbox.docker.container import LABEL_STATE
from tests.helpers.daemon import CLI, cli, daemon
from tests.helpers.sweeps import write_sweep

pytestmark = [pytest.mark.docker, pytest.mark.sweep]
WAIT = 120.0  # seconds for a container to appear or go (a manual scenario's sandbox is made in a few)


def _containers(state: Path) -> dict[str, str]:
    """Name -> state of every container labelled as `state`'s."""
    out = subprocess.run(
        [
            "docker",
            "ps",
            "-a",
            "--filter",
            f"label={LABEL_STATE}={state.resolve()}",
            "--format",
            "{{.Names}} {{.State}}",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    return dict(zip(out[::2], out[1::2], strict=True))


def _until(what: str, check: object) -> None:
    """Wait (bounded) until `check()` is true: another process's containers appear or go."""
    deadline = time.monotonic() + WAIT
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.5)  # polling the engine for another process's doing


def _manual(tmp: Path, name: str, image: str) -> Path:
    """A sweep whose one scenario waits for a person: its sandbox runs until someone ends it."""
    return write_sweep(tmp, name, ["manual"], turns=1, runtime="docker", extra=f'image = "{image}"\n', patient=True)


def test_a_deleted_state_dirs_sandboxes_go_at_the_next_daemon_start_and_a_live_neighbours_stay(
    tmp_path: Path, sandbox_image: str
) -> None:
    """kill -9 mid-sweep, state dir deleted: another daemon's start removes them; a neighbour's live ones stay."""
    doomed, neighbour, fresh = tmp_path / "doomed", tmp_path / "neighbour", tmp_path / "fresh"
    with daemon(doomed, runtime="docker") as proc:
        assert cli(doomed, "submit", str(_manual(tmp_path, "lost", sandbox_image))).returncode == 0
        _until("the doomed daemon's sandbox runs", lambda: "running" in _containers(doomed).values())
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = {name for name, state in _containers(doomed).items() if state == "running"}
    assert any(not _helper(name) for name in before), before
    shutil.rmtree(doomed)
    listed = cli(fresh, "sandboxes")
    left = before & set(_containers(doomed))  # a passing helper (AutoRemove) may go by itself meanwhile
    for name in left:  # present before and after the listing: it was there to be listed
        assert f"orphan container {name} on unix://" in listed.stdout
    assert f"its state directory {doomed.resolve()} is gone" in listed.stdout
    try:
        with daemon(neighbour, runtime="docker"):  # another daemon, elsewhere: its start removes them
            _until("the orphans are removed", lambda: not _containers(doomed))
            log = (neighbour / "staminad.log").read_text()
            for name in left:  # a helper may have gone by itself first; the sandbox's own container cannot
                removed = log.count(f"removed orphaned sandbox container {name} on ")
                assert removed <= 1 if _helper(name) else removed == 1
            assert cli(neighbour, "submit", str(_manual(tmp_path, "kept", sandbox_image))).returncode == 0
            _until("the neighbour's sandbox runs", lambda: "running" in _containers(neighbour).values())
            with daemon(fresh, runtime="docker"):
                _until("the fresh daemon has looked", lambda: _logged(fresh, "looked for orphaned sandboxes at start"))
                assert set(_containers(neighbour).values()) == {"running"}  # a live neighbour's: untouched
                listed = cli(fresh, "sandboxes")
                assert (
                    f"{neighbour.resolve()} is in use (a daemon, pid " in listed.stdout
                    and "orphan " not in listed.stdout
                )
    finally:  # the neighbour stopped leaves its sandbox for a resume: released here
        pruned = cli(neighbour, "sandboxes", "--prune", "--sweep", "kept")
        _remove(doomed)  # anything a failure above left
    assert pruned.returncode == 0, pruned.stderr
    assert not _containers(neighbour) and "removed container " in pruned.stdout


def _remove(state: Path) -> None:
    """Remove what a failed test left of `state`'s containers (the session's check then finds none)."""
    for name in _containers(state):
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60, check=False)


def _helper(name: str) -> bool:
    """A short-lived helper beside a sandbox (the seal check) that removes itself once it exits."""
    return name.endswith("-seal")


def _logged(state: Path, text: str) -> bool:
    path = state / "staminad.log"
    return path.exists() and text in path.read_text()


def test_an_interrupted_run_keeps_its_sandboxes_and_says_how_to_remove_them(tmp_path: Path, sandbox_image: str) -> None:
    """Ctrl-C: exit 130, one line naming the resume and the prune command; that command removes them."""
    state = tmp_path / "st"
    path = _manual(tmp_path, "paused", sandbox_image)
    proc = subprocess.Popen(
        [*CLI, "run", str(path), "--state-dir", str(state), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        _until("the run's sandbox runs", lambda: "running" in _containers(state).values())
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    (line,) = [line for line in out.splitlines() if line.startswith("interrupted:")]
    assert "kept for a resume" in line and f"sandboxes --prune --sweep paused --state-dir {state}" in line
    assert "running" in _containers(state).values()
    kept = cli(state, "sandboxes", "--prune")  # a resumable sweep's sandboxes are not orphans
    assert kept.returncode == 0 and "kept container" in kept.stdout and _containers(state)
    try:
        pruned = cli(state, "sandboxes", "--prune", "--sweep", "paused")
    finally:
        _remove(state)
    assert pruned.returncode == 0, pruned.stderr
    assert "removed container " in pruned.stdout
