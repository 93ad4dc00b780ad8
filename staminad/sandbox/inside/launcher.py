"""The in-container launcher: the root side's operations in a sandbox container, without a `docker exec` each.

Runs inside the container, standard library only. One long-lived copy per container is started by one
`docker exec` (as root) when the container is prepared:

    python3 -I -S launcher.py serve CONTROL

It reads requests, one JSON line each, from the FIFO CONTROL/launch.fifo, which lives in the control
directory below /opt/stamina (root, 0700): the agent can neither write requests nor read replies, and,
running as another user without capabilities, cannot signal the launcher. A request that wants an
answer gets it in CONTROL/replies/<id>.json, written aside and renamed into place. A writer that
finds no reader on the FIFO (ENXIO) knows the launcher is gone; the host then runs the very same
operation once by `docker exec` (`launcher.py once OP ARGS`, which prints the answer) and starts
a new launcher.

Operations (the same for both ways in):
- `spawn` argv: run detached in a session of its own (the wrapper, the server launcher); no answer;
- `alive` pgid / `kill` pgid: whether a process group exists / SIGKILL it;
- `listeners` port, leader, as: the listening sockets on the port and who holds them, read with the agent's
  effective ids (`as`, "uid:gid"; `pgroups.acting_as`): root here has neither CAP_SYS_PTRACE nor
  CAP_DAC_OVERRIDE, so it cannot see the agent's file descriptors, while the agent's own user can;
- `stop` pgid, port, as[, uid]: TERM then KILL the server's group, then (with `uid`) end every process of
  that user as `end_agent` does, then kill whatever still holds the port (one round trip for a teardown);
- `usage` path, as: the disk a tree takes, walked with the agent's ids (who alone can read all of its workspace);
- `end_agent` uid: end every process of the agent's user (run at each phase's end, so nothing the agent
  left, a detached pid filler, memory hog, fork chain or disk writer, outlives its phase).

No step that decides blame needs a fork: the agent's processes may hold every free pid of the container
(and free them a moment later, so that nothing on record shows it). `listeners`, `alive`, `kill` and
`end_agent` run in the loop itself, forking nothing, and what they read or signal as the agent they do
wearing the agent's effective ids for a moment (`pgroups.acting_as`), so no process of the agent can
signal or stop the check either. `usage` and the slow rest of a `stop` run in a detached grandchild,
so the loop never waits on one for long; when no process can be forked they run in the loop instead
(bounded), never failing for it. `stop` starts in the loop, which answers it itself when the server's
group ends within QUICK_STOP of its TERM and leaves the port free (a fork costs more than such a
teardown). An operation that fails for want of a resource of the container (no process, no memory)
says so (`inside`), so the host judges it by whose processes hold the container, not as the engine's.

A container whose files live in the engine's volumes is reached through `streamlauncher.py` instead,
which runs these same operations.
"""

import contextlib
import errno
import importlib.util
import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

REQUEST_LIMIT = 4096  # bytes per request line: below PIPE_BUF, so concurrent writes never interleave
AS_AGENT_TIMEOUT = 30.0  # seconds for a check run as the agent (a /proc scan, a line count) to answer
STOP_CHECK = 0.1  # seconds between looks at whether the agent stopped that check
STOP_GRACE = 5.0  # seconds a server gets after TERM
QUICK_STOP = 0.25  # seconds of that grace the launcher's loop waits itself before handing the stop to a child
PORT_FREE_TIMEOUT = 10.0  # seconds to clear the port of what the server left holding it
USAGE_ENTRIES = 500_000  # entries a workspace size walk looks at
USAGE_TIMEOUT = 20.0  # seconds it may take
_held: list[int] = []  # the FIFO's descriptor in the serving launcher, which no detached operation keeps open


def _load(name: str) -> Any:
    """A module of this directory (`-I` keeps the script's directory off sys.path)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(__file__), f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


G = _load("pgroups")
N = _load("listening")


def _as_agent(who: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """fn()'s result, computed in a child that runs as the agent (`who`: "uid:gid"), passed back by a pipe.

    The agent's own processes can signal that child (same user): one it stops or kills, or that does not
    answer within AS_AGENT_TIMEOUT, gives {"interfered": why} instead, which callers judge as the agent's
    doing, never as the platform's."""
    uid, gid = (int(x) for x in who.split(":"))
    if (uid, gid) == (os.getuid(), os.getgid()):
        return fn()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            data = json.dumps(fn()).encode()
            while data:
                data = data[os.write(w, data) :]
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    deadline = time.monotonic() + AS_AGENT_TIMEOUT
    try:
        while time.monotonic() < deadline:
            if not select.select([r], [], [], STOP_CHECK)[0]:
                got, status = os.waitpid(pid, os.WNOHANG | os.WUNTRACED)
                if got and os.WIFSTOPPED(status):  # stopped by the agent: it will answer nothing
                    os.kill(pid, signal.SIGKILL)
                    break
                continue  # (one that ended closed the pipe: the next select reads its end)
            chunk = os.read(r, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        else:
            os.kill(pid, signal.SIGKILL)  # stuck: it answers nothing now
    finally:
        os.close(r)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    try:
        return dict(json.loads(b"".join(chunks)))
    except ValueError:
        return {"interfered": "the check run as the agent's user was stopped or killed by the agent's processes"}


def _seen_as(who: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """fn()'s result, computed by this process with the agent's effective ids (`who`: "uid:gid"), forking
    nothing; the agent's processes can neither signal nor stop it meanwhile (see `pgroups.acting_as`)."""
    uid, gid = (int(x) for x in who.split(":"))
    if (uid, gid) == (os.getuid(), os.getgid()):
        return fn()
    with G.acting_as(uid, gid):
        return fn()


def _stop(pgid: int, port: int, who: str, termed: bool = False, uid: int = 0) -> dict[str, Any]:
    """TERM the server's group (unless `termed`: the loop did), KILL it after the grace, then (with `uid`) every
    process of the agent's user, then kill every holder of the port until none. The agent's processes go before
    the port is looked at: a fork chain the server left holding the listener would outrun a kill per holder."""
    if not termed:
        G.signal_group(pgid, signal.SIGTERM)
    G.wait_group(pgid, STOP_GRACE)
    G.signal_group(pgid, signal.SIGKILL)
    ended = G.end_user(uid) if uid else {}
    deadline = time.monotonic() + PORT_FREE_TIMEOUT
    while True:
        # Only who holds a socket needs the agent's eyes: a free port is seen by root directly.
        found: dict[str, Any] = _seen_as(who, lambda: N.holders(port, 0)) if N.sockets(port) else {"sockets": 0}
        sockets = found["sockets"]
        if not sockets or time.monotonic() > deadline:
            return {"sockets": sockets, **ended}
        for holder in found.get("holders", []):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(holder["pid"], signal.SIGKILL)
        time.sleep(0.05)  # the kernel closes a killed holder's socket on its own time


def _usage(path: str) -> dict[str, Any]:
    """KiB of disk the tree at `path` takes (allocated blocks: a sparse file counts what it holds), links never
    followed; bounded per entry in count and time (`partial` says the walk stopped early, so the figure is a floor)."""
    total, entries, deadline, stack = 0, 0, time.monotonic() + USAGE_TIMEOUT, [path]
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as found:
            for entry in found:
                entries += 1
                if entries > USAGE_ENTRIES or time.monotonic() > deadline:
                    return {"kb": total // 1024, "partial": True}
                with contextlib.suppress(OSError):
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
    return {"kb": total // 1024, "partial": False}


def _stop_op(args: dict[str, Any], termed: bool = False) -> dict[str, Any]:
    return _stop(int(args["pgid"]), int(args["port"]), args["as"], termed, int(args.get("uid") or 0))


def _quick_stop(args: dict[str, Any]) -> dict[str, Any] | None:
    """`stop` done by the loop itself, forking nothing, when the server's group ends within QUICK_STOP of its
    TERM and leaves the port free (the common case: a fork costs more than the rest of a teardown); None
    when it does not, and the rest of the stop (grace, KILL, holders of the port) then runs detached."""
    pgid, port = int(args["pgid"]), int(args["port"])
    G.signal_group(pgid, signal.SIGTERM)
    if not G.wait_group(pgid, QUICK_STOP):
        return None
    G.signal_group(pgid, signal.SIGKILL)  # as `_stop` does after its grace
    if N.sockets(port):
        return None
    return {"sockets": 0, **G.end_user(int(args["uid"]))} if args.get("uid") else {"sockets": 0}


def run_op(op: str, args: dict[str, Any]) -> dict[str, Any]:
    """One operation (see the module docstring); its answer as a JSON-able dict."""
    if op == "alive":
        return {"alive": G.group_alive(int(args["pgid"]))}
    if op == "kill":
        G.signal_group(int(args["pgid"]), signal.SIGKILL)
        return {}
    if op == "listeners":
        return _seen_as(args["as"], lambda: N.holders(int(args["port"]), int(args["leader"])))
    if op == "stop":
        return _stop_op(args)
    if op == "ping":
        return {"pid": os.getpid()}
    if op == "usage":
        return _seen_as(args["as"], lambda: _usage(str(args["path"])))
    if op == "end_agent":
        return dict(G.end_user(int(args["uid"])))
    raise ValueError(f"unknown operation {op!r}")


def _detached(fn: Callable[[], object], inline: bool = True) -> None:
    """Run fn() in a grandchild that leads a session of its own (pgid = its pid); the launcher never waits on it.

    When no process can be forked (the agent's processes hold the container's pid limit) fn() runs in the loop
    itself (or in the child, which the loop waits for, when only the second fork failed): the operation is
    bounded, and done late is better than a failure the host would have to blame on someone. `inline` False
    (a `spawn`, which replaces its process): a first fork that fails raises, a second one that fails drops it."""
    try:
        child = os.fork()
    except OSError:
        if not inline:
            raise
        fn()
        return
    if child:
        os.waitpid(child, 0)
        return
    try:
        try:
            grandchild = os.fork()
        except OSError:
            if inline:
                fn()
            return  # to the `finally`: the child ends
        if grandchild == 0:
            for fd in _held:  # else a long operation would keep the FIFO "read" after the launcher died
                os.close(fd)
            os.setsid()
            fn()
    finally:
        os._exit(0)


def _spawn(argv: list[str]) -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)


def _answer(replies: str, rid: str, op: str, args: dict[str, Any]) -> None:
    _answer_with(replies, rid, lambda: run_op(op, args))


SCARCE = frozenset({errno.EAGAIN, errno.ENOMEM, errno.ENOSPC, errno.EMFILE, errno.ENFILE, errno.EDQUOT})


def failure(exc: Exception) -> dict[str, object]:
    """An operation's failure as answered: `inside` when a resource of the container ran out (no process, no
    memory, no space), which the agent's processes compete for, so the host judges it by who holds them."""
    found: dict[str, object] = {"error": f"{type(exc).__name__}: {exc}"}
    if isinstance(exc, OSError) and exc.errno in SCARCE:
        found["inside"] = True
    return found


def _answer_with(replies: str, rid: str, fn: Callable[[], dict[str, Any]]) -> None:
    result: dict[str, object]
    try:
        result = {"ok": fn()}
    except Exception as exc:  # noqa: BLE001 - the host reads the failure instead of waiting out its bound
        result = failure(exc)
    _reply(replies, rid, result)


def _reply(replies: str, rid: str, result: dict[str, object]) -> None:
    tmp = os.path.join(replies, f".{rid}.tmp")
    with open(tmp, "w") as f:
        f.write(json.dumps(result))
    os.rename(tmp, os.path.join(replies, rid + ".json"))


def _valid_id(rid: object) -> bool:
    return isinstance(rid, str) and 0 < len(rid) <= 64 and all(c.isalnum() or c in "-_" for c in rid)


def handle(control: str, line: str) -> None:
    """Act on one request line: {"op": ..., "args": {...}, "id": ... (when an answer is wanted)}."""
    try:
        req = json.loads(line)
        op, args, rid = req["op"], req.get("args") or {}, req.get("id")
    except (ValueError, KeyError, TypeError, AttributeError):
        return
    if op == "spawn":
        argv = args.get("argv")
        if isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv):
            with contextlib.suppress(OSError):  # no process to fork: the host's bounded wait for what it started
                _detached(lambda: _spawn(argv), inline=False)  # judges that (by whose processes hold them)
    elif _valid_id(rid):
        replies = os.path.join(control, "replies")
        if op in ("alive", "kill", "ping", "end_agent", "listeners"):  # answered by the loop itself, forking nothing
            _answer(replies, rid, op, args)
            return
        quick = None
        if op == "stop":
            with contextlib.suppress(Exception):  # malformed: the detached run below answers what is wrong
                quick = _quick_stop(args)
        if quick is not None:
            _reply(replies, rid, {"ok": quick})
        elif op == "stop":  # TERM was sent: the detached rest does not send it again
            _detached(lambda: _answer_with(replies, rid, lambda: _stop_op(args, termed=True)))
        else:
            _detached(lambda: _answer(replies, rid, op, args))


def serve(control: str) -> None:
    fifo = os.path.join(control, "launch.fifo")
    os.makedirs(os.path.join(control, "replies"), exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkfifo(fifo, 0o600)
    # The pid first, so that whoever sees the FIFO read (the host's cue that a launcher is up) finds it too.
    tmp = os.path.join(control, ".launcher.pid.tmp")
    with open(tmp, "w") as f:
        f.write(f"{os.getpid()}\n")
    os.rename(tmp, os.path.join(control, "launcher.pid"))
    # Open for reading and writing: the FIFO then never reads as ended while no engine writes to it.
    fd = os.open(fifo, os.O_RDWR)
    _held.append(fd)
    buf = b""
    while True:
        chunk = os.read(fd, REQUEST_LIMIT)
        if not chunk:
            return
        buf += chunk
        *lines, buf = buf.split(b"\n")
        if len(buf) > REQUEST_LIMIT:
            buf = b""  # not ours: no request is that long
        for line in lines:
            if line.strip():
                handle(control, line.decode("utf-8", "replace"))


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "serve":
        serve(argv[1])
        return 0
    if len(argv) == 3 and argv[0] == "once":
        op, args = argv[1], json.loads(argv[2])
        if op == "spawn":
            _detached(lambda: _spawn(args["argv"]), inline=False)
            return 0
        try:
            print(json.dumps({"ok": run_op(op, args)}))
        except Exception as exc:  # noqa: BLE001 - answered as the loop answers it
            print(json.dumps(failure(exc)))
        return 0
    print("usage: launcher.py serve CONTROL | once OP JSON-ARGS", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
