"""Port locks in a real sweep: a lock directory another user planted a link at does not stop a run, and a range
whose every port is busy is the platform's `port_taken`, said in one line, never `internal_error`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from protocol.events import InfraFailure
from staminad.sandbox.local import local_factory
from staminad.sandbox.ports import LOCK_DIR_ENV, RANGE_ENV, PortAllocator
from tests.helpers.sweeps import Recorder, sweep, write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]

AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user needs root")
def test_a_run_starts_and_scores_with_a_link_planted_at_its_lock_directory(tmp_path: Path) -> None:
    """`staminad run` moves aside the link another user planted at its lock directory's path, and scores."""
    # The parent is sticky and world-writable, like /tmp: where another user can plant a name.
    shared = Path(tempfile.mkdtemp(prefix="staminabench-ports-test-", dir="/tmp"))
    try:
        shared.chmod(0o1777)
        trap = shared / "trap"
        plant = "import os, sys; os.mkdir(sys.argv[1], 0o777); os.symlink(sys.argv[1], sys.argv[2])"
        subprocess.run([*AS_NOBODY, sys.executable, "-c", plant, str(trap), str(shared / "locks")], check=True)
        path = write_sweep(tmp_path, "planted", ["reference"], turns=0, retries=0)
        env = {**os.environ, LOCK_DIR_ENV: str(shared / "locks"), RANGE_ENV: "31450-31459"}
        done = subprocess.run(
            [sys.executable, "-m", "staminad.cli", "run", str(path), "--state-dir", str(tmp_path / "state")],
            env={**env, "PYTHONPATH": str(Path(__file__).parents[2])},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert "1 (done 1; n=1)" in done.stdout and "internal_error" not in done.stdout + done.stderr, done.stdout
        assert not (shared / "locks").is_symlink() and list(trap.iterdir()) == []
        assert "was a symlink or not a directory: moved aside" in done.stderr
    finally:
        shutil.rmtree(shared)


_HOLDER = """
import sys
from pathlib import Path
from staminad.sandbox.ports import PortAllocator
ports = PortAllocator(31460, 31461, lock_dir=Path(sys.argv[1]))
print(ports.allocate(), ports.allocate(), flush=True)
sys.stdin.read()
"""


async def test_no_free_port_is_the_platforms_port_taken_saying_why(tmp_path: Path) -> None:
    """Every port locked by another process: each attempt is `port_taken`, saying why in one line, never internal."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path / "locks")],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().split() == ["31460", "31461"]
        rec = Recorder()
        path = write_sweep(tmp_path, "busy", ["reference"], turns=0, retries=0)
        allocator = PortAllocator(31460, 31461, lock_dir=tmp_path / "locks")
        res = await sweep(path, tmp_path / "state", factory=local_factory(allocator), recorder=rec)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
        holder.stdout.close()
    config = res["reference R=0 detailed"]
    assert config.statuses == {"infra_failed": 1} and set(config.infra) == {"port_taken"}
    failures = rec.kinds(InfraFailure)
    assert failures and all(f.infra_kind == "port_taken" for f in failures)
    assert "no free port in 31460-31461 (2 locked by another process" in failures[0].detail
    assert "\n" not in failures[0].detail
