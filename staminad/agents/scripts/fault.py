"""Fault-injecting agent: really does the named fault inside the sandbox, else acts as the reference agent.

python3 fault.py --fault KIND [--once] --workspace DIR --prompt-file FILE

Harness faults (infra: retried without touching R): self-kill, hang, crash, hostile (tries to end or
break its sandbox from inside: kill 1, writes into the control directory, fills /tmp, then kill -9 -1;
in a sealed container all it can end is its own processes, so it dies as `harness_killed`; locally it
ends its own process group). Server faults (the agent's
code failing: scored, consume R): no-server (never listens), server-crash (a SyntaxError at start),
accept-close, trickle (a byte at a time), slow (every answer after 6 s, past the default per-request
budget of 5 s), huge-response (a 100 KiB header), forked-server (the server detaches from
run_server.sh's process group, so it would be left running). Not a fault: slow-start (a correct
server that listens only after 3 s, for exercising a sandbox lost while its server starts).
Server fault nested-json: every answer is a 200 whose body is valid JSON nested 100,000 deep (200 KB,
under the size cap, so the suite has to read it). Server faults against the platform's own steps (the
reference's code, hostile to the host side; see `hostile.py`): pid-trick, teardown-hog, hostile-server.

Leftover faults (the agent's code is the reference's, correct; what it leaves behind when its harness
ends is hostile to the host side and must not change the verdict nor reach the host): pid-filler (a
detached process holding the container's whole pid limit), memory-hog (a detached process holding most of
its memory), fork-chains (detached fork chains, see `hostile.py`), disk-writer (a detached writer that puts
3 GiB of allocated blocks in the workspace, past the 2 GiB quota, and keeps writing), plant-links (`.home`
becomes a link to the workspace's host directory's parent, read from /proc/self/mountinfo, and
`initial_specification.md` a dangling link to a host path), plant-specials (`.home` a plain file, a FIFO
and a sparse 1 GiB file among the sources).

With --once the fault happens on the first call only (a transient failure that an infra retry, or
a feedback retry for server faults, recovers from); the state of that lives in the workspace, like
a harness session. Standard library only.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(os.path.abspath(__file__)).parent
sys.path.insert(0, str(HERE.parent.parent / "reference"))

from agent import SERVER_PACKAGE, run  # type: ignore[import-not-found]  # noqa: E402 - the reference agent, in the sandbox
from hostile import SERVERS, fork_chains  # type: ignore[import-not-found]  # noqa: E402 - beside this script

HARNESS_FAULTS = ("self-kill", "hang", "crash", "hostile")
SERVER_FAULTS = (
    "no-server",
    "server-crash",
    "accept-close",
    "trickle",
    "slow",
    "huge-response",
    "nested-json",
    "forked-server",
    "slow-start",
    *SERVERS,
)

LEFTOVER_FAULTS = ("pid-filler", "memory-hog", "fork-chains", "disk-writer", "plant-links", "plant-specials")

# A misbehaving server: python3 fault_server.py SHAPE PORT. Each connection gets its own thread, so a
# slow answer to one probe never hides how the server treats the next.
FAULT_SERVER = r"""
import socket, sys, threading, time
shape, port = sys.argv[1], int(sys.argv[2])
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

def serve(conn):
    with conn:
        if shape == "accept-close":
            return
        conn.recv(65536)
        if shape == "trickle":
            for i in range(len(RESPONSE)):
                conn.sendall(RESPONSE[i:i + 1])
                time.sleep(0.5)
        elif shape == "slow":
            time.sleep(6)
            conn.sendall(RESPONSE)
        elif shape == "huge-response":
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Padding: " + b"a" * (100 * 1024) + b"\r\nContent-Length: 2\r\n\r\n{}")
        elif shape == "nested-json":
            body = b"[" * 100000 + b"]" * 100000
            head = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
            conn.sendall(head.encode() + body)

with socket.create_server(("0.0.0.0", port)) as server:
    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""

SERVE = f'python3 -B -m {SERVER_PACKAGE} --config config.json --port "$1"'  # the reference server, as run_server.sh
RUN = {
    "no-server": "# never listens on the port\nexec sleep 100000\n",
    "server-crash": 'cd "$(dirname "$0")"\nexec python3 broken_server.py "$1"\n',
    "slow-start": f'cd "$(dirname "$0")"\nsleep 3\nexec {SERVE}\n',
    "forked-server": (
        'cd "$(dirname "$0")"\n# detached into a session of its own: stopping run_server.sh leaves it\n'
        f"setsid {SERVE} &\nexec sleep 100000\n"
    ),
}


def write_server(workspace: Path, fault: str) -> None:
    """Replace the reference server's start script with the faulty one."""
    if fault == "server-crash":
        (workspace / "broken_server.py").write_text("import json\n\ndef main(:\n    pass\n")
    elif fault in SERVERS:
        script = f"fault_{fault.replace('-', '_')}.py"
        (workspace / script).write_text(SERVERS[fault])
        run = f'#!/usr/bin/env bash\ncd "$(dirname "$0")"\nexec python3 -B {script} "$1"\n'
        (workspace / "run_server.sh").write_text(run)
        return
    elif fault not in RUN:
        (workspace / "fault_server.py").write_text(FAULT_SERVER)
    body = RUN.get(fault, f'cd "$(dirname "$0")"\nexec python3 fault_server.py {fault} "$1"\n')
    (workspace / "run_server.sh").write_text("#!/usr/bin/env bash\n" + body)


def _detach(fn: Callable[[], object]) -> None:
    """Run fn() in a grandchild in a session of its own, stdio closed: it outlives the harness (until the engine
    ends every process of the agent's user at the phase's end)."""
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:
        fn()
    finally:
        os._exit(0)


def _fill_pids() -> None:
    """Fork sleeping children until the kernel refuses (the pid limit), then keep trying."""
    while True:
        try:
            if os.fork() == 0:
                while True:
                    time.sleep(3600)
        except OSError:
            time.sleep(0.05)


def _hog_memory() -> None:
    """Hold nearly all the memory the container may use (touched, so it is really resident), short of the limit
    so the kernel's OOM killer is not what ends it."""
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            limit = int(fh.read().strip())
        with open("/sys/fs/cgroup/memory.current") as fh:
            room = limit - int(fh.read().strip()) - (96 << 20)
    except (OSError, ValueError):
        room = 1 << 30
    held = []
    while room > 0:
        held.append(bytearray(min(room, 16 << 20)))
        room -= 16 << 20
    while True:
        time.sleep(3600)


def _write_disk(workspace: Path) -> None:
    """Allocate 3 GiB in the workspace at once (past its 2 GiB quota; in parts, as no file may pass the `fsize`
    limit of 1 GiB), then keep appending."""
    for i in range(3):
        with open(workspace / f"ballast-{i}.bin", "wb") as fh:
            os.posix_fallocate(fh.fileno(), 0, 1000 << 20)
    with open(workspace / "ballast-0.bin", "ab") as fh:
        while True:
            fh.write(b"x" * (1 << 20))
            fh.flush()
            time.sleep(0.01)


def _host_path_of_workspace() -> str | None:
    """The host directory bind-mounted at /workspace, as the container's mount table shows it (or None)."""
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) > 4 and fields[4] == "/workspace":
                    return fields[3]
    except OSError:
        pass
    return None


def leave(workspace: Path, fault: str) -> None:
    """Leave behind, as the harness ends, what the leftover fault names (see the module docstring)."""
    if fault == "pid-filler":
        _detach(_fill_pids)
    elif fault == "memory-hog":
        _detach(_hog_memory)
    elif fault == "fork-chains":
        _detach(fork_chains)
    elif fault == "disk-writer":
        _detach(lambda: _write_disk(workspace))
        deadline = time.monotonic() + 10
        while not (workspace / "ballast-2.bin").exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # the harness ends once the ballast is in place, as an agent's writer would be
    elif fault == "plant-links":
        host = _host_path_of_workspace() or "/etc"
        parent = os.path.dirname(host.rstrip("/")) or "/"
        home = workspace / ".home"
        if home.is_dir() and not home.is_symlink():
            shutil.rmtree(home)
        home.unlink(missing_ok=True)
        home.symlink_to(parent)
        spec = workspace / "initial_specification.md"
        spec.unlink(missing_ok=True)
        spec.symlink_to(os.path.join(parent, "planted-by-the-agent"))
    elif fault == "plant-specials":
        home = workspace / ".home"
        if home.is_dir() and not home.is_symlink():
            shutil.rmtree(home)
        home.unlink(missing_ok=True)
        home.write_text("not a directory\n")
        fifo = workspace / "zz.py"
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo)
        with open(workspace / "huge.py", "wb") as fh:
            fh.truncate((1 << 30) - 1)  # sparse, as large as the `fsize` limit lets any file be


def _attempt(fn: Callable[[], object]) -> str:
    try:
        fn()
    except OSError as exc:
        return type(exc).__name__
    return "allowed"


def _fill(path: str) -> None:
    """Write until the file system is full (ENOSPC ends it) or 1 GiB is written."""
    with open(path, "wb") as fh:
        for _ in range(1024):
            fh.write(b"x" * (1 << 20))
            fh.flush()


def hostile(workspace: Path) -> None:
    """Try to end or break the sandbox from inside; what each try gave is left in `.hostile.json`."""
    if not (Path("/.dockerenv").exists() and workspace.resolve() == Path("/workspace")):
        os.killpg(0, signal.SIGKILL)  # locally a job's sandbox is its process group: never signal the user's others
    tried = {
        "kill 1": _attempt(lambda: os.kill(1, signal.SIGKILL)),
        "term 1": _attempt(lambda: os.kill(1, signal.SIGTERM)),
        "signal the wrapper": _attempt(lambda: os.kill(os.getppid(), signal.SIGKILL)),
        "write control": _attempt(lambda: Path("/opt/stamina/control/evil").write_text("x")),
        "forge marker": _attempt(lambda: Path("/opt/stamina/control/markers/t0000-a01-i00.json").write_text("{}")),
        "write prompts": _attempt(lambda: Path("/stamina/prompts/evil.md").write_text("x")),
        "replace the wrapper": _attempt(lambda: Path("/harness/sandbox/inside/wrapper.sh").write_text("exit 0")),
        "fill /tmp": _attempt(lambda: _fill("/tmp/fill")),
    }
    tmp = workspace / ".hostile.json.tmp"
    tmp.write_text(json.dumps(tried))
    tmp.replace(workspace / ".hostile.json")
    os.kill(-1, signal.SIGKILL)  # every process this user may signal but this one: here, only the agent's own
    os.kill(os.getpid(), signal.SIGKILL)  # as a shell's `kill -9 -1` is followed by the harness's end


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fault", required=True, choices=[*HARNESS_FAULTS, *SERVER_FAULTS, *LEFTOVER_FAULTS])
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--workspace", type=Path, required=True)
    ap.add_argument("--prompt-file", type=Path, required=True)
    args = ap.parse_args()
    flag = args.workspace / ".fault-injected"
    inject = not (args.once and flag.exists())
    flag.write_text(args.fault)
    prompt = args.prompt_file.read_text()
    if inject and args.fault == "self-kill":
        # The classic mistake: a pattern that also matches this harness's own command line. It names
        # this workspace so that other sweeps' fault agents on the same machine (local runtime: no pid
        # namespace) survive; the harness dies by the same signal either way.
        subprocess.run(["pkill", "-f", f"fault.py --fault {args.fault}.* --workspace {args.workspace} "], check=False)
        time.sleep(30)  # not reached when the pkill hit us, which is the point
        return 0
    if inject and args.fault == "hang":
        while True:
            time.sleep(3600)
    if inject and args.fault == "crash":
        print("fault injector: crashing before writing any code", file=sys.stderr)
        return 3
    if inject and args.fault == "hostile":
        hostile(args.workspace)
        time.sleep(30)  # not reached
        return 0
    run(args.workspace, prompt, None, False)
    if inject and args.fault in SERVER_FAULTS:
        write_server(args.workspace, args.fault)
    if inject and args.fault in LEFTOVER_FAULTS:
        leave(args.workspace, args.fault)
    return 0


if __name__ == "__main__":
    sys.exit(main())
