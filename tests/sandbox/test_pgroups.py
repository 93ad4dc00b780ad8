"""pgroups: a process group is awaited until its last live member has exited, its leader's exit not enough."""

from __future__ import annotations

import signal
import subprocess

from staminad.sandbox.inside import pgroups


def test_a_group_is_alive_while_a_member_outlives_its_leader_and_done_once_that_exits() -> None:
    """The leader gone and a detached member left: not done within a short wait; done once the member is killed."""
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!"], stdout=subprocess.PIPE, start_new_session=True)
    assert leader.stdout is not None
    with leader.stdout:
        member = int(leader.stdout.readline())
    leader.wait()  # the leader has exited (and is reaped): only the member keeps the group
    pgid = leader.pid
    try:
        assert pgroups._live_members(pgid) == [member]
        assert not pgroups.wait_group(pgid, 0.05)
        pgroups.signal_group(pgid, signal.SIGKILL)
        assert pgroups.wait_group(pgid, 30.0)
        assert pgroups._live_members(pgid) == []
    finally:
        pgroups.signal_group(pgid, signal.SIGKILL)


def test_a_group_of_running_processes_ends_when_all_are_termed() -> None:
    """Leader and member both running: TERM to the group, and the wait returns as soon as both have exited."""
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & wait"], start_new_session=True)
    try:
        assert not pgroups.wait_group(leader.pid, 0.05)
        pgroups.signal_group(leader.pid, signal.SIGTERM)
        assert pgroups.wait_group(leader.pid, 30.0)
    finally:
        pgroups.signal_group(leader.pid, signal.SIGKILL)
        leader.wait()
