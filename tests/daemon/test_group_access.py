"""`staminad start --socket-group G`: members of G reach the daemon as themselves; other users cannot look in.

Real users and a real group, made for the test with `groupadd`/`useradd` and removed after (so it needs
root). The client runs in a child forked from this process that drops to the user's uid, gid and groups
(what `setpriv --init-groups` sets) and then runs the CLI's `main`, rather than in a new process started
as that user: the interpreter of this checkout may live where the user cannot execute it (here under
/root, mode 0700), while the kernel checks the same credentials either way.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from staminad.cli import main
from staminad.daemon.access import AccessError, share_state_dir
from tests.helpers.daemon import CLI, cli, daemon

pytestmark = pytest.mark.sweep

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("useradd") is None,
    reason="making users and a group (useradd, groupadd) and changing to them needs root and the shadow tools",
)


@contextlib.contextmanager
def throwaway_accounts(group: str, member: str, outsider: str) -> Iterator[None]:
    """A group, a user in it (as a supplementary group) and a user who is not; all removed afterwards."""
    nologin = shutil.which("nologin") or "/bin/false"
    try:
        subprocess.run(["groupadd", group], check=True, capture_output=True, timeout=60)
        for user, groups in ((member, ["-G", group]), (outsider, [])):
            argv = ["useradd", "--no-create-home", "--no-user-group", "--shell", nologin, *groups, user]
            subprocess.run(argv, check=True, capture_output=True, timeout=60)
        yield
    finally:
        for user in (member, outsider):
            subprocess.run(["userdel", user], capture_output=True, timeout=60)
        subprocess.run(["groupdel", group], capture_output=True, timeout=60)


def as_user(user: str, work: Callable[[], int]) -> tuple[int, str]:
    """Run `work` in a forked child with `user`'s uid, gid and groups -> (its exit status, its output)."""
    pw = pwd.getpwnam(user)
    groups = os.getgrouplist(user, pw.pw_gid)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 70
        try:
            os.close(read)
            sys.stdout = sys.stderr = os.fdopen(write, "w", buffering=1)
            os.setgroups(groups)
            os.setresgid(pw.pw_gid, pw.pw_gid, pw.pw_gid)
            os.setresuid(pw.pw_uid, pw.pw_uid, pw.pw_uid)
            status = work()
        except BaseException:  # noqa: BLE001 - the child process reports whatever stopped it
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            os._exit(status)
    os.close(write)
    out = b""
    with os.fdopen(read, "rb") as pipe:
        while select.select([pipe], [], [], 120)[0]:  # bounded: a child that hangs fails the test below
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                break
            out += chunk
        else:
            os.kill(pid, signal.SIGKILL)
    _, wait_status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(wait_status), out.decode(errors="replace")


def _read(path: Path) -> int:
    """0 when `path` can be read; 13 (EACCES) when permission is refused."""
    try:
        path.read_bytes()
    except PermissionError:
        return 13
    return 0


def _share(state_dir: Path, group: str) -> int:
    """The daemon's sharing of its state dir: 0, or 1 with the one line a user would see."""
    try:
        share_state_dir(state_dir, group)
    except AccessError as exc:
        print(exc)
        return 1
    return 0


@needs_root
def test_members_of_the_socket_group_use_the_daemon_and_others_cannot_look_in() -> None:
    """The state dir and socket become the socket group's: members use the daemon, outsiders cannot look in."""
    suffix = secrets.token_hex(3)
    group, member, outsider = f"sbg{suffix}", f"sbm{suffix}", f"sbo{suffix}"
    base = Path(tempfile.mkdtemp(prefix="sb-group-", dir="/tmp"))  # pytest's tmp_path is root's alone (0700)
    try:
        base.chmod(0o755)
        state = base / "st"
        state.mkdir(mode=0o750)
        with throwaway_accounts(group, member, outsider), daemon(state, extra=("--socket-group", group)):
            # The root client's answer comes after the socket's mode and group are set (no await between).
            assert cli(state, "status").returncode == 0
            gid = grp.getgrnam(group).gr_gid
            shared, sock = state.stat(), (state / "staminad.sock").stat()
            assert (shared.st_uid, shared.st_gid, stat.S_IMODE(shared.st_mode)) == (0, gid, 0o2750)
            assert (sock.st_gid, stat.S_IMODE(sock.st_mode)) == (gid, 0o660)
            assert (state / "staminad.log").stat().st_gid == gid  # made after: the setgid bit gave it the group

            status = ["status", "--state-dir", str(state)]
            code, out = as_user(member, lambda: main(status))
            assert code == 0 and "daemon: 0 of 64 scenario slots in use" in out, out
            assert as_user(member, lambda: _read(state / "staminad.db")) == (0, "")
            code, out = as_user(outsider, lambda: main(status))
            assert code == 1 and f"no permission to use {state / 'staminad.sock'}" in out, out
            assert as_user(outsider, lambda: _read(state / "staminad.db")) == (13, "")
            assert as_user(outsider, lambda: _read(state / "staminad.log")) == (13, "")

            own = base / "own"  # a state dir of the outsider's: it is not in the group, so it cannot share it
            own.mkdir()
            os.chown(own, pwd.getpwnam(outsider).pw_uid, -1)
            code, out = as_user(outsider, lambda: _share(own, group))
            assert code == 1 and f"cannot share the state directory {own} with group {group!r}" in out, out
            assert f"be a member of {group!r}" in out and stat.S_IMODE(own.stat().st_mode) != 0o2750
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_socket_mode_that_shuts_the_group_out_is_refused(tmp_path: Path) -> None:
    """`--socket-group G --socket-mode 600` would let no member connect: exit 2 with one line, nothing started."""
    state = str(tmp_path / "st")
    done = subprocess.run(
        [*CLI, "start", "--state-dir", state, "--socket-group", "root", "--socket-mode", "600"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "gives group 'root' no way in" in done.stderr, done.stderr
    assert not (tmp_path / "st").exists()
