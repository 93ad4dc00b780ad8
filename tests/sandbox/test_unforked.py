"""The launcher's steps that decide blame work with no process to fork, and the agent can neither outrun nor signal
them: fork chains end in one sweep, the agent cannot signal the launcher while it wears the agent's ids, and the
port check, the agent's end and a server's stop all answer while every fork fails."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from staminad.sandbox.inside import launcher, pgroups

SPARE_UID = 48813  # a user no process of this machine runs as: a kill(-1) as it reaches nothing else
CHAINS = 20  # detached fork chains: each process forks its successor and exits at once

CHAIN = """
import os, sys, time
uid = int(sys.argv[1])
os.setgroups([]); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)
for _ in range(int(sys.argv[2])):
    if os.fork() == 0:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        while True:
            try:
                if os.fork():
                    os._exit(0)
            except OSError:
                time.sleep(0.001)
print("started", flush=True)
"""


@pytest.fixture
def spare_user() -> Iterator[int]:
    """The spare uid, owning nothing before and after the test (ended whatever the test left)."""
    if os.getuid() != 0:
        pytest.skip("needs root, as the launcher in a container has")
    assert pgroups._live_of_user(SPARE_UID) == []
    yield SPARE_UID
    pgroups.end_user(SPARE_UID)


def test_fork_chains_are_ended_in_one_sweep_and_proven_gone(spare_user: int) -> None:
    """Detached fork chains, which outrun a kill per pid, all end: the pipe each holds reads as ended after it."""
    r, w = os.pipe()
    try:
        started = subprocess.run(
            [sys.executable, "-c", CHAIN, str(spare_user), str(CHAINS)], capture_output=True, pass_fds=[w]
        )
        os.close(w)
        assert started.stdout.strip() == b"started"
        os.set_blocking(r, False)
        with pytest.raises(BlockingIOError):
            os.read(r, 1)  # not ended: the chains hold its writing end
        found = pgroups.end_user(spare_user)
        assert found["left"] == 0 and found["ended"] >= 1
        os.set_blocking(r, True)
        assert os.read(r, 1) == b""  # every process of every chain is gone (a zombie holds no descriptor)
    finally:
        os.close(r)


def test_the_agent_cannot_signal_the_launcher_while_it_wears_the_agents_ids(spare_user: int) -> None:
    """A process of the agent's user tries to stop the launcher while the launcher acts as that user: refused."""
    probe = (
        "import os, signal, sys\n"
        f"os.setgroups([]); os.setresgid({spare_user}, {spare_user}, {spare_user}); "
        f"os.setresuid({spare_user}, {spare_user}, {spare_user})\n"
        "sys.stdin.readline()\n"
        "try:\n    os.kill(int(sys.argv[1]), signal.SIGSTOP)\n    print('allowed', flush=True)\n"
        "except PermissionError:\n    print('refused', flush=True)\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", probe, str(os.getpid())], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as agent:
        assert agent.stdin is not None and agent.stdout is not None
        with pgroups.acting_as(spare_user, spare_user):
            assert (os.geteuid(), os.getegid()) == (spare_user, spare_user)
            agent.stdin.write(b"go\n")
            agent.stdin.flush()
            said = agent.stdout.readline()
        assert said == b"refused\n"
    assert (os.getuid(), os.geteuid(), os.getgid(), os.getegid()) == (0, 0, 0, 0)


@pytest.fixture
def no_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fork of this process fails as it does when the agent's processes hold the container's pid limit."""

    def refused() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)


def _asked(control: Path, op: str, args: dict[str, object]) -> dict[str, object]:
    """What the serving launcher answers to one request line (`launcher.handle`)."""
    (control / "replies").mkdir(exist_ok=True)
    launcher.handle(str(control), json.dumps({"op": op, "args": args, "id": "r1"}))
    reply: dict[str, object] = json.loads((control / "replies" / "r1.json").read_text())
    (control / "replies" / "r1.json").unlink()
    return reply


def test_the_port_check_and_the_agents_end_answer_with_no_process_to_fork(
    tmp_path: Path, spare_user: int, no_fork: None
) -> None:
    """`listeners` (as the agent) and `end_agent` are answered by the loop itself while every fork fails."""
    who = f"{spare_user}:{spare_user}"
    with socket.create_server(("127.0.0.1", 0)) as held:
        port = held.getsockname()[1]
        found = _asked(tmp_path, "listeners", {"port": port, "leader": 0, "as": who})
    answer = found["ok"]
    assert isinstance(answer, dict) and answer["sockets"] == 1 and answer["unseen"] == 0
    assert [h["pid"] for h in answer["holders"]] == [os.getpid()]  # the scan's own process: readable to itself
    assert _asked(tmp_path, "end_agent", {"uid": spare_user}) == {"ok": {"ended": 0, "left": 0}}


def test_a_slow_stop_is_done_in_the_loop_when_no_process_can_be_forked(
    tmp_path: Path, no_fork: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that ignores TERM past the quick stop is still stopped and answered, the grace waited in the loop."""
    monkeypatch.setattr(launcher, "STOP_GRACE", 0.5)
    ignores = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(60)"
    with subprocess.Popen([sys.executable, "-c", ignores], start_new_session=True, stdout=subprocess.PIPE) as server:
        try:
            assert server.stdout is not None and server.stdout.readline() == b"\n"  # its TERM handler is in place
            found = _asked(tmp_path, "stop", {"pgid": server.pid, "port": 1, "as": "0:0"})
            assert found == {"ok": {"sockets": 0}}
            assert server.wait(timeout=30) == -signal.SIGKILL
        finally:
            server.kill()
