"""Port locks against another local user: run as a real other uid (nobody), the attacker can neither hold our
locks nor redirect them, and what it plants where it could write (an old world-writable lock directory, a
symlink at the lock directory's path) is moved aside, never followed, and never stops an allocation."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from staminad.sandbox.ports import LOCK_DIR_ENV, PortAllocator, PortLockError

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user needs root")

AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
NOBODY = 65534
ROOT = str(Path(__file__).parents[2])

# Takes what it can of ports argv[2]..argv[3] in the lock directory argv[1] the way the attacker did: a lock
# file of its own held with a shared lock, or a symlink to a file of root's; says what it got, then holds on.
_PLANT = """
import fcntl, os, sys
locks, low, high = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
held, got = [], {"locked": 0, "linked": 0, "denied": 0}
for port in range(low, high + 1):
    path = os.path.join(locks, f"{port}.lock")
    try:
        if port % 2:
            os.symlink("/etc/shadow", path)
            got["linked"] += 1
        else:
            fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            held.append(fd)
            got["locked"] += 1
    except OSError:
        got["denied"] += 1
print(got, flush=True)
sys.stdin.read()
"""


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory root owns that every user may enter (tmp_path is root's alone): where a lock directory is put."""
    path = Path(tempfile.mkdtemp(prefix="staminabench-ports-test-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


def _nobody(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*AS_NOBODY, sys.executable, "-c", script, *map(str, args)],
        env={**os.environ, "PYTHONPATH": ROOT},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _done(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    proc.wait(timeout=60)
    proc.stdout.close()


def _said(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def test_another_user_can_neither_hold_nor_redirect_a_lock(shared: Path) -> None:
    """In the directory the allocator makes, nobody can open, lock or plant a single lock file: every port is ours."""
    locks = shared / "locks"
    ours = PortAllocator(31400, 31409, lock_dir=locks)
    assert locks.stat().st_uid == 0 and locks.stat().st_mode & 0o777 == 0o700
    attacker = _nobody(_PLANT, locks, 31400, 31409)
    try:
        assert _said(attacker) == "{'locked': 0, 'linked': 0, 'denied': 10}"
        assert sorted(ours.allocate() for _ in range(10)) == list(range(31400, 31410))
    finally:
        _done(attacker)


def test_a_world_writable_lock_directory_full_of_planted_locks_is_moved_aside(shared: Path) -> None:
    """The old 1777 directory, each name held or linked by nobody: moved aside whole, a fresh one made, ports given."""
    locks = shared / "locks"
    locks.mkdir()
    locks.chmod(0o1777)  # as earlier versions made it, and /tmp is
    attacker = _nobody(_PLANT, locks, 31410, 31419)
    try:
        assert _said(attacker) == "{'locked': 5, 'linked': 5, 'denied': 0}"
        ours = PortAllocator(31410, 31419, lock_dir=locks)
        assert sorted(ours.allocate() for _ in range(10)) == list(range(31410, 31420))
    finally:
        _done(attacker)
    (aside,) = shared.glob(".locks.untrusted-*")
    assert len(list(aside.iterdir())) == 10  # what was planted is kept as it was, nothing followed or deleted
    assert locks.stat().st_mode & 0o7777 == 0o700 and not any(p.is_symlink() for p in locks.iterdir())


def test_a_symlink_planted_at_the_lock_directorys_path_is_replaced_not_followed(shared: Path) -> None:
    """Nobody's link at our path (in a sticky parent, like /tmp) is moved aside; its target is never used."""
    # The target is a directory of nobody's own, where it holds what locks it can.
    shared.chmod(0o1777)
    trap = shared / "trap"
    plant = _nobody(
        "import os, sys; os.mkdir(sys.argv[1], 0o777); os.symlink(sys.argv[1], sys.argv[2]); print('planted')",
        trap,
        shared / "locks",
    )
    try:
        assert _said(plant) == "planted"
    finally:
        _done(plant)
    attacker = _nobody(_PLANT, trap, 31420, 31421)
    try:
        assert _said(attacker) == "{'locked': 1, 'linked': 1, 'denied': 0}"
        ours = PortAllocator(31420, 31421, lock_dir=shared / "locks")
        assert [ours.allocate(), ours.allocate()] == [31420, 31421]
    finally:
        _done(attacker)
    assert (shared / "locks").is_dir() and not (shared / "locks").is_symlink()
    assert sorted(p.name for p in trap.iterdir()) == ["31420.lock", "31421.lock"]  # nothing of ours went there


def test_a_lock_directory_reached_through_another_users_directory_is_refused_in_one_line(shared: Path) -> None:
    """A configured path below a directory nobody owns (which it could swap at will) is refused, in one line."""
    (shared / "theirs").mkdir()
    os.chown(shared / "theirs", NOBODY, NOBODY)
    with pytest.raises(PortLockError) as info:
        PortAllocator(31430, 31431, lock_dir=shared / "theirs" / "locks")
    message = str(info.value)
    assert "\n" not in message and f"{shared / 'theirs'}, owned by uid {NOBODY}" in message


# An allocator of a user that is not root, on its default lock directory: prints its port and holds it.
_USER_HOLDER = """
import sys
from staminad.sandbox.ports import PortAllocator
ports = PortAllocator(31440, 31441)
print(ports.lock_dir, ports.allocate(), flush=True)
sys.stdin.read()
"""


def test_a_user_that_is_not_root_locks_in_its_own_directory_shared_by_its_processes(shared: Path) -> None:
    """Two processes of one unprivileged user meet in its state home's lock directory and never share a port."""
    home = shared / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    env = {k: v for k, v in os.environ.items() if k not in (LOCK_DIR_ENV, "XDG_STATE_HOME")}
    holders, said = [], []
    try:
        for _ in range(2):
            holder = subprocess.Popen(
                [*AS_NOBODY, sys.executable, "-c", _USER_HOLDER],
                env={**env, "HOME": str(home), "PYTHONPATH": ROOT},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            holders.append(holder)
            said.append(_said(holder).split())
    finally:
        for holder in holders:
            _done(holder)
    locks = home / ".local" / "state" / "staminabench" / "ports"
    assert [d for d, _ in said] == [str(locks)] * 2 and {int(p) for _, p in said} == {31440, 31441}
    assert locks.stat().st_uid == NOBODY and locks.stat().st_mode & 0o777 == 0o700


_HOLD_IMAGE_LOCK = """
import fcntl, os, sys
path = os.path.join(sys.argv[1], sys.argv[2])
fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
print("held", flush=True)
sys.stdin.read()
"""


def test_an_image_build_lock_held_by_another_user_does_not_stop_a_build(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Image-build locks are this user's alone too: nobody's lock in an old 1777 directory makes no build wait."""
    from staminad.sandbox.docker.buildshow import LOCK_DIR_ENV as IMAGE_LOCKS
    from staminad.sandbox.docker.buildshow import lock_name, tag_lock

    images, tag = shared / "images", "staminabench/sandbox:locked-by-nobody"
    images.mkdir()
    images.chmod(0o1777)
    monkeypatch.setenv(IMAGE_LOCKS, str(images))
    attacker = _nobody(_HOLD_IMAGE_LOCK, images, lock_name(tag))
    said: list[str] = []
    try:
        assert _said(attacker) == "held"

        def build() -> None:
            with tag_lock(tag, said.append):
                pass

        took = threading.Thread(target=build)
        took.start()
        took.join(60)
        assert not took.is_alive() and said == []  # taken at once: no "another build ... waiting"
    finally:
        _done(attacker)
    assert images.stat().st_mode & 0o7777 == 0o700 and len(list(shared.glob(".images.untrusted-*"))) == 1
