"""The launcher's answers, as its own code writes them, decode into the host's Structs; a failed or malformed
answer is a SandboxError naming the operation."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from staminad.sandbox.base import InsideFailure, SandboxError
from staminad.sandbox.docker.replies import (
    NOTHING,
    Absent,
    Alive,
    Done,
    JobFiles,
    Listeners,
    Loc,
    Owner,
    Pong,
    Tagged,
    Text,
    Usage,
    decode,
)
from staminad.sandbox.inside import launcher, streamlauncher

ME = f"{os.getuid()}:{os.getgid()}"  # the agent's user in the container; here the test's own, so nothing forks


def _sent(answer: dict[str, Any]) -> bytes:
    """The line the launcher writes for an answer (`launcher._reply`, `launcher.main`'s `once`)."""
    return json.dumps({"ok": answer}).encode()


def test_the_launchers_own_answers_decode_into_their_structs(tmp_path: Path) -> None:
    """alive, ping, usage and listeners, computed by launcher.py itself, read back as fields."""
    assert decode(_sent(launcher.run_op("alive", {"pgid": os.getpgid(0)})), Alive, "alive") == Alive(alive=True)
    assert decode(_sent(launcher.run_op("ping", {})), Pong, "ping").pid == os.getpid()
    (tmp_path / "f").write_bytes(b"x" * 4096)
    usage = decode(_sent(launcher.run_op("usage", {"path": str(tmp_path), "as": ME})), Usage, "usage")
    assert usage.kb >= 4 and not usage.partial
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        # A child holds the socket, alone once this process lets go of it.
        with subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, pass_fds=[held.fileno()]
        ) as child:
            held.close()
            found = launcher.run_op("listeners", {"port": port, "leader": child.pid, "as": ME})
            assert child.stdin is not None
            child.stdin.close()
        listeners = decode(_sent(found), Listeners, "listeners")
    assert listeners.sockets == 1 and listeners.leader_start is not None
    assert [(h.pid, h.pgid, "sys.stdin.read()" in h.cmd) for h in listeners.holders] == [
        (child.pid, os.getpgid(0), True)
    ]


def test_the_streamers_own_answers_decode_into_their_structs(tmp_path: Path) -> None:
    """read, state, owner and absent, computed by streamlauncher.py itself, read back as fields."""
    control, workspace = tmp_path / "control", tmp_path / "workspace"
    (control / "jobs" / "j").mkdir(parents=True)
    workspace.mkdir()
    (control / "jobs" / "j" / "pid").write_text("42\n")
    (workspace / "here").write_text("")

    def answer(op: str, args: dict[str, Any]) -> bytes:
        return _sent(streamlauncher._stream_op(str(control), str(workspace), op, args))

    assert decode(answer("read", {"path": "jobs/j/pid", "limit": 10}), Text, "read") == Text(text="42\n")
    assert decode(answer("read", {"path": "none", "limit": 10}), Text, "read") == Text(text=None)
    assert decode(answer("state", {"job": "j"}), JobFiles, "state") == JobFiles(written=True, pid="42", marker=None)
    assert decode(answer("owner", {}), Owner, "owner") == Owner(uid=os.getuid())
    absent = decode(answer("absent", {"names": ["here", "gone"], "as": ME}), Absent, "absent")
    assert absent == Absent(absent=("gone",))
    line = json.dumps({"id": "r1", "ok": {}}).encode()
    assert msgspec.json.decode(line, type=Tagged).id == "r1" and decode(line, Done, "write") == Done()


def test_an_operation_that_answers_nothing_and_a_spoiled_count_decode() -> None:
    """`spawn` (no answer written) is Done, and a count the agent's processes spoiled says so in `interfered`."""
    assert decode(NOTHING, Done, "spawn") == Done()
    assert decode(_sent({"interfered": "stopped by the agent"}), Loc, "loc") == Loc(interfered="stopped by the agent")


def test_a_failure_for_want_of_the_containers_resources_is_judged_not_blamed() -> None:
    """Out of processes or memory inside is an InsideFailure (judged later); other failures stay engine_error."""
    scarce = json.dumps(launcher.failure(BlockingIOError(11, "Resource temporarily unavailable")))
    with pytest.raises(InsideFailure, match="the sandbox launcher failed listeners: BlockingIOError"):
        decode(scarce, Listeners, "listeners")
    other = json.dumps(launcher.failure(ValueError("unknown operation 'x'")))
    with pytest.raises(SandboxError) as caught:
        decode(other, Listeners, "listeners")
    assert type(caught.value) is SandboxError and caught.value.kind == "engine_error"


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (json.dumps({"error": "ValueError: unknown operation 'x'"}), "the sandbox launcher failed alive: ValueError"),
        ('{"ok": {"alive": "yes"}}', "unreadable launcher answer to alive: Expected `bool`"),
        ('{"ok": {}}', "unreadable launcher answer to alive: Object missing required field `alive`"),
        ("not json", "unreadable launcher answer to alive: JSON is malformed"),
    ],
)
def test_a_failed_or_malformed_answer_is_an_engine_error(raw: str, said: str) -> None:
    """The launcher's own error, a wrong field type, a missing field and garbage each name the operation."""
    with pytest.raises(SandboxError, match=said) as caught:
        decode(raw, Alive, "alive")
    assert caught.value.kind == "engine_error"
