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
under the size cap, so the suite has to read it).

With --once the fault happens on the first call only (a transient failure that an infra retry, or
a feedback retry for server faults, recovers from); the state of that lives in the workspace, like
a harness session. Standard library only.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(os.path.abspath(__file__)).parent
sys.path.insert(0, str(HERE.parent.parent / "reference"))

from agent import run  # type: ignore[import-not-found]  # noqa: E402 - the reference agent, in the sandbox

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
)

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

RUN = {
    "no-server": "# never listens on the port\nexec sleep 100000\n",
    "server-crash": 'cd "$(dirname "$0")"\nexec python3 broken_server.py "$1"\n',
    "slow-start": 'cd "$(dirname "$0")"\nsleep 3\nexec python3 server.py --config config.json --port "$1"\n',
    "forked-server": (
        'cd "$(dirname "$0")"\n# detached into a session of its own: stopping run_server.sh leaves it\n'
        'setsid python3 server.py --config config.json --port "$1" &\nexec sleep 100000\n'
    ),
}


def write_server(workspace: Path, fault: str) -> None:
    """Replace the reference server's start script with the faulty one."""
    if fault == "server-crash":
        (workspace / "broken_server.py").write_text("import json\n\ndef main(:\n    pass\n")
    elif fault not in RUN:
        (workspace / "fault_server.py").write_text(FAULT_SERVER)
    body = RUN.get(fault, f'cd "$(dirname "$0")"\nexec python3 fault_server.py {fault} "$1"\n')
    (workspace / "run_server.sh").write_text("#!/usr/bin/env bash\n" + body)


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
        "replace the wrapper": _attempt(lambda: Path("/harness/sandbox/wrapper.sh").write_text("exit 0")),
        "fill /tmp": _attempt(lambda: _fill("/tmp/fill")),
    }
    tmp = workspace / ".hostile.json.tmp"
    tmp.write_text(json.dumps(tried))
    tmp.replace(workspace / ".hostile.json")
    os.kill(-1, signal.SIGKILL)  # every process this user may signal but this one: here, only the agent's own
    os.kill(os.getpid(), signal.SIGKILL)  # as a shell's `kill -9 -1` is followed by the harness's end


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fault", required=True, choices=[*HARNESS_FAULTS, *SERVER_FAULTS])
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
