"""The in-container launcher of a volume sandbox, reached over one attached `docker exec` (standard library only).

A sandbox whose files live in the engine's volumes shares no disk with the daemon, so there is no FIFO
to write into: the host keeps one attached exec of

    python3 -I -S streamlauncher.py CONTROL WORKSPACE

(as root) and writes requests, one JSON line each with an `id`, to its stdin; every answer is one JSON
line on stdout carrying that id. It runs the operations of `launcher.py` (loaded from its own
directory: spawn, alive, kill, listeners, stop) and those a shared disk made needless: `state` of a
job (command written, pid, marker), `read` of a bounded head or tail of a control file, `write` of a
root-owned control or prompt file, `remove`, `owner` of the workspace, `wait` for a job's marker
(bounded), `absent` (which workspace files are missing) and `loc` (lines of code, by the layer's
`loc.py`), the last two as the agent. Each request is answered in a thread of its own, so a `wait`
holds up nothing else. The launcher's checks as the agent wear the agent's ids for a moment
(`pgroups.acting_as`), which the C library changes for every thread at once: so one operation runs
at a time (`ONE_AT_A_TIME`), a `wait` taking its turn only for each look at its marker (the daemon
sends one request at a time anyway). Its stdin ending (the daemon went) ends it; what it spawned runs
on, and a new daemon attaches a new one.
"""

import contextlib
import importlib.util
import json
import os
import sys
import threading
import time
from typing import Any

REQUEST_LIMIT = 4 << 20  # bytes per request line (a prompt travels in one): only the daemon writes here


def _load(name: str) -> Any:
    """A module of this directory (`-I` keeps the script's directory off sys.path)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(__file__), f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


L = _load("launcher")

MARKER_LIMIT = 64 * 1024
READ_LIMIT = 1 << 20  # the most a `read` returns
WAIT_LIMIT = 30.0  # seconds one `wait` may take
WAIT_POLL = 0.02  # seconds between looks for a marker (no inotify in the standard library)
ONE_AT_A_TIME = threading.Lock()  # held by every operation, so none runs as root while another wears the agent's ids


def _below(base: str, rel: str) -> str:
    """`rel` below `base`, refusing anything that leaves it."""
    path = os.path.normpath(os.path.join(base, rel))
    if not path.startswith(base.rstrip("/") + "/"):
        raise ValueError(f"{rel!r} is outside {base}")
    return path


def _control_file(control: str, rel: str) -> str:
    return _below(control, rel)


def _private_file(control: str, under: str, rel: str) -> str:
    """A file of the root-only side: below CONTROL, or below the prompts' writable mount next to it."""
    if under not in ("control", "prompts"):
        raise ValueError(f"cannot write under {under!r}")
    return _below(os.path.join(os.path.dirname(control.rstrip("/")), under), rel)


def _write(path: str, text: str, mode: int) -> None:
    """Write a root-owned file whole (aside, then renamed), its directories made as needed."""
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode & 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, mode & 0o644)
    os.rename(tmp, path)


def _read(path: str, limit: int, tail: bool = False) -> str | None:
    """At most `limit` bytes of a file (its end when `tail`), decoded leniently; None when it is missing."""
    try:
        with open(path, "rb") as f:
            if tail:
                f.seek(max(0, f.seek(0, 2) - limit))
            return f.read(limit).decode("utf-8", "replace")
    except FileNotFoundError:
        return None


def _marker(control: str, job: str) -> object:
    text = _read(_control_file(control, f"markers/{job}.json"), MARKER_LIMIT)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        return {"exit": None, "signal": None, "error": f"unreadable marker: {exc}"}


def _job_state(control: str, job: str) -> dict[str, Any]:
    jobdir = _control_file(control, f"jobs/{job}")
    pid = _read(os.path.join(jobdir, "pid"), 64)
    return {"written": os.path.isdir(jobdir), "pid": pid.strip() if pid else None, "marker": _marker(control, job)}


def _wait(control: str, job: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + min(float(timeout), WAIT_LIMIT)
    while True:
        with ONE_AT_A_TIME:
            marker = _marker(control, job)
        if (isinstance(marker, dict) and "exit" in marker) or time.monotonic() >= deadline:
            return {"marker": marker}
        time.sleep(WAIT_POLL)


def _loc(workspace: str) -> dict[str, Any]:
    """The workspace's lines of code, by the layer's own loc.py (run as the agent, who owns the files)."""
    return {"loc": _load("loc").count_loc(workspace)}


def _stream_op(control: str, workspace: str, op: str, args: dict[str, Any]) -> dict[str, Any]:
    if op == "state":
        return _job_state(control, str(args["job"]))
    if op == "wait":
        return _wait(control, str(args["job"]), float(args["timeout"]))
    if op == "read":
        limit = min(int(args["limit"]), READ_LIMIT)
        return {"text": _read(_control_file(control, str(args["path"])), limit, bool(args.get("tail")))}
    if op == "loc":
        return dict(L._as_agent(str(args["as"]), lambda: _loc(workspace)))
    if op == "write":
        _write(_private_file(control, str(args["under"]), str(args["path"])), str(args["text"]), int(args["mode"]))
        return {}
    if op == "absent":  # which of the names are not in the workspace, looked up as the agent who owns it
        names = [str(n) for n in args["names"] if "/" not in str(n) and str(n) not in (".", "..")]
        return dict(
            L._as_agent(
                str(args["as"]),
                lambda: {"absent": [n for n in names if not os.path.lexists(os.path.join(workspace, n))]},
            )
        )
    if op == "owner":  # who owns the workspace's root (a new volume's is root's until handed to the agent)
        return {"uid": os.stat(workspace).st_uid}
    if op == "remove":
        with contextlib.suppress(FileNotFoundError):
            os.unlink(_control_file(control, str(args["path"])))
        return {}
    if op == "spawn":
        argv = args["argv"]
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
            raise ValueError("spawn needs an argv of strings")
        L._detached(lambda: L._spawn(argv), inline=False)
        return {}
    return dict(L.run_op(op, args))


def stream(control: str, workspace: str) -> None:
    """Answer requests from stdin on stdout, each in a thread of its own (a `wait` holds up nothing else)."""
    out = sys.stdout.buffer
    lock = threading.Lock()

    def answer(rid: str, op: str, args: dict[str, Any]) -> None:
        try:
            if op == "wait":  # takes its turn per look (see the module docstring)
                found = _stream_op(control, workspace, op, args)
            else:
                with ONE_AT_A_TIME:
                    found = _stream_op(control, workspace, op, args)
            result: dict[str, object] = {"id": rid, "ok": found}
        except Exception as exc:  # noqa: BLE001 - the host reads the failure instead of waiting out its bound
            result = {"id": rid, **L.failure(exc)}
        line = json.dumps(result).encode() + b"\n"
        with lock:
            out.write(line)
            out.flush()

    for raw in sys.stdin.buffer:
        if len(raw) > REQUEST_LIMIT:
            continue  # not ours: no request is that long
        try:
            req = json.loads(raw)
            op, args, rid = req["op"], req.get("args") or {}, req["id"]
        except (ValueError, KeyError, TypeError):
            continue
        if L._valid_id(rid) and isinstance(args, dict):
            threading.Thread(target=answer, args=(rid, op, args), daemon=True).start()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: streamlauncher.py CONTROL WORKSPACE", file=sys.stderr)
        sys.exit(2)
    stream(sys.argv[1], sys.argv[2])
