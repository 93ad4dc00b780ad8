"""Port allocation: unique within a process and across every staminabench process and user on the machine, and
never a port the kernel may give to an outgoing connection."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from staminad.sandbox.ports import (
    LOCK_DIR_ENV,
    RANGE_ENV,
    PortAllocator,
    PortRangeError,
    PortsExhausted,
    default_lock_dir,
    is_outgoing,
    outgoing_ports,
    port_is_free,
)


def test_port_allocator_never_hands_out_a_port_twice(tmp_path: Path) -> None:
    """Ports are unique until released, and the range running out is an error, not a wait."""
    # The range lies below Linux's ephemeral ports (32768+), so outgoing connections cannot occupy it.
    ports = PortAllocator(31200, 31203, lock_dir=tmp_path / "locks")
    got = {ports.allocate() for _ in range(4)}
    assert len(got) == 4
    with pytest.raises(PortsExhausted):
        ports.allocate()
    ports.release(31201)
    assert ports.allocate() == 31201


_HOLDER = """
import sys, time
from pathlib import Path
from staminad.sandbox.ports import PortAllocator
ports = PortAllocator(31210, 31212, lock_dir=Path(sys.argv[1]))
print(ports.allocate(), flush=True)
time.sleep(300)
"""


def test_a_port_another_process_reserved_is_skipped_until_that_process_dies(tmp_path: Path) -> None:
    """Two allocators on one machine never share a port, even before a server binds it; a crash frees it."""
    locks = tmp_path / "locks"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(locks)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        taken = int(holder.stdout.readline())
        assert taken == 31210 and port_is_free(taken)  # reserved, not bound: a bind check alone would hand it out
        ours = PortAllocator(31210, 31212, lock_dir=locks)
        assert ours.allocate() == 31211
    finally:
        holder.kill()
        holder.communicate()  # reaps it and closes its stdout pipe
    assert PortAllocator(31210, 31210, lock_dir=locks).allocate() == 31210
    assert (locks.stat().st_mode & 0o777) == 0o700  # this user's processes share it; no other user reaches in


def test_a_range_with_every_port_busy_is_the_platforms_port_taken_in_one_line(tmp_path: Path) -> None:
    """Every lock held elsewhere: PortsExhausted, the platform's `port_taken`, in one line saying why."""
    locks = tmp_path / "locks"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(locks)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and int(holder.stdout.readline()) == 31210
        ours = PortAllocator(31210, 31210, lock_dir=locks)
        with pytest.raises(PortsExhausted) as info:
            ours.allocate()
    finally:
        holder.kill()
        holder.communicate()
    assert info.value.kind == "port_taken"
    message = str(info.value)
    assert "\n" not in message and "no free port in 31210-31210 (1 locked by another process" in message
    assert str(locks) in message and RANGE_ENV in message


def test_adopting_a_port_takes_its_lock_and_refuses_one_held_elsewhere(tmp_path: Path) -> None:
    """`adopt` reserves a port as `allocate` would, and refuses one another allocator (or this one) holds."""
    locks = tmp_path / "locks"
    first, second = PortAllocator(31250, 31252, lock_dir=locks), PortAllocator(31250, 31252, lock_dir=locks)
    assert first.adopt(31251) and 31251 in first.held
    assert not first.adopt(31251)  # already handed out here
    assert not second.adopt(31251)  # its lock is the first one's
    assert first.allocate() == 31250 and first.allocate() == 31252  # an adopted port is never handed out
    first.release(31251)
    assert second.adopt(31251)


def _outgoing_block(size: int) -> tuple[int, int]:
    """`size` consecutive ports the kernel may give to outgoing connections on this host (none reserved)."""
    ephemeral, reserved = outgoing_ports()
    assert ephemeral is not None, "this host's /proc says nothing of its outgoing port range"
    usable = (p for p in range(*ephemeral) if all(is_outgoing(p + i, ephemeral, reserved) for i in range(size)))
    low = next(usable)
    return low, low + size - 1


def test_a_range_overlapping_the_kernels_outgoing_ports_is_refused_in_one_line(tmp_path: Path) -> None:
    """A configured range reaching into ip_local_port_range is refused at once, in one line naming both ranges."""
    low, _ = _outgoing_block(5)
    with pytest.raises(PortRangeError) as info:
        PortAllocator(low - 5, low + 4, lock_dir=tmp_path / "locks")
    message = str(info.value)
    assert "\n" not in message and f"{low - 5}-{low + 4}" in message and "ip_local_port_range" in message
    assert "5 ports" in message  # only the overlap counts: the five below the kernel's range are fine


def test_staminad_ports_is_checked_when_a_run_starts(tmp_path: Path) -> None:
    """`staminad run` with STAMINAD_PORTS inside the kernel's outgoing range exits 2 with one line, running nothing."""
    low, high = _outgoing_block(10)
    sweep = tmp_path / "s.toml"
    sweep.write_text('name = "ports"\n[matrix]\nagents = ["reference"]\n[run]\nruntime = "local"\n')
    env = {**os.environ, RANGE_ENV: f"{low}-{high}", "STAMINAD_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run(
        [sys.executable, "-m", "staminad.cli", "run", str(sweep)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{RANGE_ENV} {low}-{high} overlaps" in lines[0]
    assert "runtime:" not in done.stdout  # refused before any sandbox


UNSHARE = ["unshare", "--user", "--map-root-user", "--net"]  # a network namespace, its sysctls this test's own
AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

_IN_NETNS = """
import sys
from pathlib import Path
from staminad.sandbox.ports import PortAllocator, PortRangeError
Path("/proc/sys/net/ipv4/ip_local_port_range").write_text(sys.argv[2])
Path("/proc/sys/net/ipv4/ip_local_reserved_ports").write_text(sys.argv[3])
try:
    if sys.argv[4]:
        low, high = (int(x) for x in sys.argv[4].split("-"))
        ports = PortAllocator(low, high, lock_dir=Path(sys.argv[1]))
    else:
        ports = PortAllocator(lock_dir=Path(sys.argv[1]))
except PortRangeError as exc:
    sys.exit(f"refused: {exc}")
seen = set()
for _ in range(ports.high - ports.low + 1):  # each port handed out and given back: the round covers every usable one
    port = ports.allocate()
    seen.add(port)
    ports.release(port)
print(len(seen), min(seen), max(seen))
"""


@pytest.mark.parametrize(
    ("kernel", "reserved", "configured", "says"),
    [
        ("25000 60999", "", "", "5000 20000 24999"),  # the default range less the outgoing ports
        pytest.param(  # reserved ports are never outgoing; 3.6-4.4 s of CPU, over the fast tier's budget
            "20011 60999", "20000-20010,20020-20029", "", "21 20000 20029", marks=pytest.mark.slow
        ),
        ("1024 65535", "", "", "refused: the default port range 20000-29999 overlaps"),
        ("1024 65535", "20000-29999", "", "10000 20000 29999"),
        ("1024 65535", "40000-40009", "40000-40009", "10 40000 40009"),  # a configured range the kernel reserves
        ("1024 65535", "40000-40008", "40000-40009", "refused: port range 40000-40009 overlaps"),
    ],
)
def test_only_ports_no_outgoing_connection_can_take_are_handed_out(
    tmp_path: Path, kernel: str, reserved: str, configured: str, says: str
) -> None:
    """Only ports outgoing connections cannot take are handed out, by default and in a configured range."""
    # Each case runs in a network namespace with sysctls of its own.
    done = subprocess.run(
        [*UNSHARE, sys.executable, "-c", _IN_NETNS, str(tmp_path / "locks"), kernel, reserved, configured],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = (done.stdout + done.stderr).strip()
    assert out.startswith(says) and len(out.splitlines()) == 1, out
    assert done.returncode == (1 if says.startswith("refused") else 0)


_TMPDIR_HOLDER = """
import sys, tempfile
from staminad.sandbox.ports import PortAllocator, default_lock_dir
ports = PortAllocator(31220, 31221)
print(tempfile.gettempdir(), default_lock_dir(), ports.allocate(), flush=True)
sys.stdin.read()  # holds its port until the test closes its stdin
"""


def test_the_lock_directory_does_not_depend_on_tmpdir(tmp_path: Path) -> None:
    """Two allocators whose TMPDIRs differ lock in the same directory, this user's, and never share a port."""
    env = {k: v for k, v in os.environ.items() if k != LOCK_DIR_ENV}
    env["PYTHONPATH"] = str(Path(__file__).parents[2])
    holders, lines = [], []
    try:
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            holder = subprocess.Popen(
                [sys.executable, "-c", _TMPDIR_HOLDER],
                env={**env, "TMPDIR": str(tmp_path / name)},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            holders.append(holder)
            assert holder.stdout is not None
            lines.append(holder.stdout.readline().split())
    finally:
        for holder in holders:
            assert holder.stdin is not None and holder.stdout is not None
            holder.stdin.close()
            holder.wait(timeout=60)
            holder.stdout.close()
    (tmp_a, dir_a, port_a), (tmp_b, dir_b, port_b) = lines
    assert (tmp_a, tmp_b) == (str(tmp_path / "a"), str(tmp_path / "b"))  # each sees its own TMPDIR
    assert dir_a == dir_b and not dir_a.startswith("/tmp")
    assert {int(port_a), int(port_b)} == {31220, 31221}


def test_a_symlink_in_place_of_a_lock_file_is_never_followed(tmp_path: Path) -> None:
    """A symlink in place of a lock file is a busy port: skipped, its target untouched."""
    locks = tmp_path / "locks"
    PortAllocator(31240, 31241, lock_dir=locks)
    target = tmp_path / "precious"
    target.write_text("keep")
    (locks / "31240.lock").symlink_to(target)
    assert PortAllocator(31240, 31241, lock_dir=locks).allocate() == 31241
    assert target.read_text() == "keep" and (locks / "31240.lock").is_symlink()


def test_the_default_lock_directory_is_roots_under_run_or_the_users_state_home(tmp_path: Path) -> None:
    """Root locks in /run/staminabench/ports; another user below its state home, never in a world-writable place."""
    if os.geteuid() == 0:
        assert default_lock_dir() == Path("/run/staminabench/ports")
    env = {k: v for k, v in os.environ.items() if k not in (LOCK_DIR_ENV, "XDG_STATE_HOME")}
    show = "from staminad.sandbox.ports import default_lock_dir; print(default_lock_dir())"
    done = subprocess.run(
        [*(AS_NOBODY if os.geteuid() == 0 else []), sys.executable, "-c", show],
        env={**env, "HOME": "/home/someone", "PYTHONPATH": str(Path(__file__).parents[2])},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == "/home/someone/.local/state/staminabench/ports", done.stderr


def test_a_lock_directory_of_this_user_that_others_may_read_is_kept_and_closed(tmp_path: Path) -> None:
    """A lock directory made by `mkdir` under umask 022 is this user's: kept, with its locks, and closed to others."""
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o755)
    (locks / "31260.lock").write_text("")
    ports = PortAllocator(31260, 31261, lock_dir=locks)
    assert locks.stat().st_mode & 0o777 == 0o700 and not list(tmp_path.glob(".locks.untrusted-*"))
    assert ports.allocate() == 31260 and (locks / "31260.lock").stat().st_mode & 0o777 == 0o600
