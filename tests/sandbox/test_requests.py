"""The host's typed launcher requests: each goes on the wire as the `args` the launcher's own code reads, and
names the Struct its answer decodes into."""

from __future__ import annotations

import ast
import inspect
import json
import os
from pathlib import Path
from typing import Any

import msgspec

from staminad.sandbox.docker.replies import Absent, Alive, JobFiles, Owner, Pong, Text, Usage, decode
from staminad.sandbox.docker.requests import (
    FindAbsent,
    IsAlive,
    MeasureUsage,
    Ping,
    ReadFile,
    ReadJob,
    ReadOwner,
    Request,
    StopServer,
    answer_of,
    answer_type,
    wire,
)
from staminad.sandbox.inside import launcher, streamlauncher

ME = f"{os.getuid()}:{os.getgid()}"  # the agent's user in the container; here the test's own, so nothing forks


def _requests() -> list[type[Request[Any]]]:
    """Every request class (the subclasses of Request, found by walking them)."""
    found, todo = [], list(Request.__subclasses__())
    while todo:
        kind = todo.pop()
        found.append(kind)
        todo += kind.__subclasses__()
    return found


def _ops_read_by(module: object) -> set[str]:
    """The operation names a launcher module dispatches on (`op == "..."`)."""
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    return {
        node.comparators[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Name)
        and node.left.id == "op"
        and isinstance(node.comparators[0], ast.Constant)
        and isinstance(node.comparators[0].value, str)
    }


def test_every_operation_the_launcher_reads_has_one_request_naming_its_answer() -> None:
    """One request class per operation launcher.py and streamlauncher.py read, none left over, each with its answer."""
    kinds = _requests()
    ops = [kind.op for kind in kinds]
    assert len(ops) == len(set(ops))
    assert set(ops) == _ops_read_by(launcher) | _ops_read_by(streamlauncher)
    assert all(issubclass(answer_type(kind), msgspec.Struct) for kind in kinds)


def test_a_request_goes_on_the_wire_as_the_args_the_launcher_reads() -> None:
    """Renamed fields (`as`), an unset optional uid (left out) and tuples come out as the JSON the launcher reads."""
    assert wire(StopServer(pgid=3, port=8000, as_=ME)) == ("stop", {"pgid": 3, "port": 8000, "as": ME})
    assert wire(StopServer(pgid=3, port=8000, as_=ME, uid=7))[1]["uid"] == 7
    assert wire(ReadFile(path="server.log", limit=10, tail=False)) == (
        "read",
        {"path": "server.log", "limit": 10, "tail": False},
    )
    op, args = wire(FindAbsent(names=("a", "b"), as_=ME))
    assert json.loads(json.dumps({"op": op, "args": args})) == {"op": "absent", "args": {"names": ["a", "b"], "as": ME}}


def _asked(request: Request[Any], control: Path, workspace: Path) -> bytes:
    """The launcher's own answer to `request` sent over the wire (`streamlauncher._stream_op`, which runs every op)."""
    op, args = wire(request)
    args = json.loads(json.dumps(args))  # as the launcher reads them: through JSON
    return json.dumps({"ok": streamlauncher._stream_op(str(control), str(workspace), op, args)}).encode()


def test_the_launchers_own_answers_to_typed_requests_decode_into_their_answers(tmp_path: Path) -> None:
    """alive, ping, usage, read, state, owner and absent, asked with typed requests, answer the Struct each names."""
    control, workspace = tmp_path / "control", tmp_path / "workspace"
    (control / "jobs" / "j").mkdir(parents=True)
    workspace.mkdir()
    (control / "jobs" / "j" / "pid").write_text("42\n")
    (workspace / "here").write_bytes(b"x" * 4096)

    def ask(request: Request[Any]) -> object:
        return decode(_asked(request, control, workspace), answer_of(request), request.op)

    assert ask(IsAlive(pgid=os.getpgid(0))) == Alive(alive=True)
    assert ask(Ping()) == Pong(pid=os.getpid())
    usage = ask(MeasureUsage(path=str(workspace), as_=ME))
    assert isinstance(usage, Usage) and usage.kb is not None and usage.kb >= 4
    assert ask(ReadFile(path="jobs/j/pid", limit=10, tail=False)) == Text(text="42\n")
    assert ask(ReadJob(job="j")) == JobFiles(written=True, pid="42", marker=None)
    assert ask(ReadOwner()) == Owner(uid=os.getuid())
    assert ask(FindAbsent(names=("here", "gone"), as_=ME)) == Absent(absent=("gone",))
