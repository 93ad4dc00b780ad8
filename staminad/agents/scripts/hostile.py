"""Servers and leftovers of the fault agent (`fault.py`) that attack the steps where the platform decides blame.

Each is the reference's correct code made hostile to the host side: what it does must never turn the agent's own
doing into a platform fault (an unscored scenario), nor stop the platform from ending it. Standard library only;
what a server does is written into the workspace beside it (`SERVERS`, run by `run_server.sh` as `python3 -B
NAME.py PORT`), and each leaves what it managed in `.NAME.json` there, for a test to see that the attack ran.

- pid-trick: serves from a pool of worker threads made at its start; every other free pid of the container is
  held by idle threads, and each time the launcher wakes (its context switches in /proc move) the pids are freed
  ~40 ms later and taken again, so a step of the platform's that forks fails while nothing on record shows why;
- teardown-hog: ignores TERM; on it, starts fork chains (each process forks its successor and exits) that keep the
  listening socket, and holds every pid left with idle threads;
- hostile-server: while serving, tries to stop and kill every other process of the container (the launcher, the
  server's launcher, its log capper, init) and to write the launcher's FIFO, over and over.

Leftover `fork-chains` (`fork_chains`): detached fork chains left running as the harness ends.
"""

import os
import time

FORK_CHAINS = 150  # detached fork chains the `fork-chains` leftover starts

_COMMON = r"""
import json, os, runpy, signal, sys, threading, time

def note(name, found):
    tmp = f".{name}.json.tmp"
    with open(tmp, "w") as fh:
        json.dump(found, fh)
    os.replace(tmp, f".{name}.json")

def hold():
    # Every free pid of the container, held by idle threads until the returned event is set.
    release, held = threading.Event(), 0
    while True:
        try:
            threading.Thread(target=release.wait, daemon=True).start()
        except RuntimeError:
            return release, held
        held += 1

def chain():
    while True:
        try:
            if os.fork():
                os._exit(0)
        except OSError:
            time.sleep(0.001)

def serve(port):
    sys.argv = ["refserver", "--config", "config.json", "--port", port]
    runpy.run_module("refserver", run_name="__main__", alter_sys=True)

threading.stack_size(256 * 1024)
"""

PID_TRICK = (
    _COMMON
    + r"""
import queue, socketserver
jobs = queue.SimpleQueue()

def work():
    while True:
        server, request, address = jobs.get()
        try:
            server.finish_request(request, address)
        except Exception:
            server.handle_error(request, address)
        finally:
            server.shutdown_request(request)

for _ in range(8):  # made before the pids are taken: serving needs no new one
    threading.Thread(target=work, daemon=True).start()
socketserver.ThreadingMixIn.process_request = lambda self, request, address: jobs.put((self, request, address))

def launchers():
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if b"launcher.py" in fh.read():
                    found.append(name)
        except OSError:
            pass
    return found

def switches(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as fh:
                total += sum(int(line.split()[1]) for line in fh if "ctxt_switches" in line)
        except OSError:
            pass
    return total

def trick():
    pids, squeezes, most = launchers(), 0, 0
    while True:
        release, held = hold()
        last = switches(pids)
        while switches(pids) == last:
            time.sleep(0.0005)
        time.sleep(0.04)
        release.set()
        squeezes, most = squeezes + 1, max(most, held)
        note("pid-trick", {"launchers": len(pids), "squeezes": squeezes, "held": most})

threading.Thread(target=trick, daemon=True).start()
serve(sys.argv[1])
"""
)

TEARDOWN_HOG = (
    _COMMON
    + r"""
def hog(signum, frame):
    note("teardown-hog", {"termed": True})  # first: the chains take the CPU, the stop's KILL may come before the rest
    started = 0
    for _ in range(50):
        try:
            if os.fork() == 0:
                os.setsid()
                chain()
            started += 1
        except OSError:
            break
    note("teardown-hog", {"termed": True, "chains": started})
    release, held = hold()
    note("teardown-hog", {"termed": True, "chains": started, "held": held})

signal.signal(signal.SIGTERM, hog)
serve(sys.argv[1])
"""
)

HOSTILE_SERVER = (
    _COMMON
    + r"""
def owner(pid):
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("Uid:"))

def attack():
    me, tried = os.getpid(), {}
    while True:
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                uid = owner(name)
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    cmd = fh.read(80).replace(b"\0", b" ").decode("utf-8", "replace").strip()
            except (OSError, StopIteration):
                continue
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                try:
                    os.kill(int(name), sig)
                    got = "allowed"
                except OSError as exc:
                    got = type(exc).__name__
                tried.setdefault(f"{sig.name} {name} uid {uid} {cmd}", got)
        try:
            with open("/opt/stamina/control/launch.fifo", "w") as fh:
                fh.write('{"op": "end_agent", "args": {"uid": 0}, "id": "x"}\n')
            tried["write the launcher's FIFO"] = "allowed"
        except OSError as exc:
            tried["write the launcher's FIFO"] = type(exc).__name__
        note("hostile-server", tried)
        time.sleep(0.005)

threading.Thread(target=attack, daemon=True).start()
serve(sys.argv[1])
"""
)

SERVERS = {"pid-trick": PID_TRICK, "teardown-hog": TEARDOWN_HOG, "hostile-server": HOSTILE_SERVER}


def _chain() -> None:
    """Fork a successor and exit, forever: the chain's one live process is never the one a kill per pid read."""
    while True:
        try:
            if os.fork():
                os._exit(0)
        except OSError:
            time.sleep(0.001)


def fork_chains() -> None:
    """Start FORK_CHAINS detached fork chains, each in a session of its own (run in a detached process)."""
    for _ in range(FORK_CHAINS):
        try:
            if os.fork() == 0:
                os.setsid()
                _chain()
        except OSError:
            time.sleep(0.01)
