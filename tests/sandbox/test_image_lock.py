"""One image build per tag machine-wide, and progress for a long step: a second `image build` of a tag whose lock
another process holds says so and waits, then finds the image; a step says what runs and for how long."""

from __future__ import annotations

import fcntl
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from staminad.sandbox.docker.buildshow import LOCK_DIR_ENV, lock_name, step

pytestmark = pytest.mark.docker


def test_a_second_build_of_a_tag_waits_for_the_first_and_says_so(sandbox_image: str, tmp_path: Path) -> None:
    """With the tag's lock held here, `image build` says `another build ... (pid N); waiting`, then returns."""
    locks = tmp_path / "locks"
    locks.mkdir()
    fd = os.open(locks / lock_name(sandbox_image), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"{os.getpid()}\n".encode())
    build = subprocess.Popen(
        [sys.executable, "-m", "staminad.cli", "image", "build"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, LOCK_DIR_ENV: str(locks)},
    )
    try:
        assert build.stderr is not None
        line = build.stderr.readline()  # blocks until the build has met the lock
        assert line == f"image build: another build of {sandbox_image} is running (pid {os.getpid()}); waiting\n"
        assert build.poll() is None  # still waiting: the lock is held here
    finally:
        os.close(fd)  # the "first build" ends
    out, err = build.communicate(timeout=300)
    assert build.returncode == 0, err
    assert out == f"already built: {sandbox_image}\n"
    assert f"the other build of {sandbox_image} ended after" in err


def test_a_long_step_says_what_runs_with_the_time_and_the_tools_last_line() -> None:
    """`step` says its start, a line per period with the elapsed time and the tool's last line, and its end."""
    said: queue.Queue[str] = queue.Queue()
    ticked = threading.Event()

    def say(line: str) -> None:
        said.put(line)
        if ": " in line and " - " in line:
            ticked.set()

    with step(say, "mmdebstrap", lambda: "I: installing packages", every=0.01):
        assert ticked.wait(60)
    lines = [said.get_nowait() for _ in range(said.qsize())]
    assert lines[0] == "mmdebstrap..."
    assert lines[1].startswith("mmdebstrap: ") and lines[1].endswith("s - I: installing packages")
    assert lines[-1].startswith("mmdebstrap: ended after ")
