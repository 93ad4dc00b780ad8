"""The CPU priority of what the daemon starts: agents, their servers and suite workers run below the daemon.

At 500 concurrent scenarios on two cores the daemon's event loop shared the CPUs with ~1,000 agent and server
processes and the suite workers: its late wake-ups were spent waiting for a core, not running (the loop probe
saw its thread on CPU in 1% of them), so `status` and marker latency were the OS's queue, not our code. Every
process the daemon starts for a scenario therefore runs `CHILD_NICE` niceness levels below it (`staminad start
--child-nice N`, 0 for none): under contention the control plane gets the CPU first, and where nothing else
competes for the cores the children still get all the CPU it leaves.

Two kernel mechanisms are covered, forking nothing and running no Python between fork and exec:

- the process's nice value (`nice -n N` in front of the argv): what counts when the daemon runs in a cgroup
  of its own (a systemd service), where the scheduler weighs tasks against each other;
- its autogroup's nice value: with `kernel.sched_autogroup_enabled` and the daemon in the root CPU cgroup (a
  bare shell, many containers), each session is its own group weighed as one task whatever its processes'
  nice values, and agents and servers start sessions of their own (`setsid`), so a nice value alone would do
  nothing there. `in_new_session` writes the group's value from inside the new session (`/proc/self/autogroup`;
  ignored where the kernel has no autogroups, or refuses: it lets a process without CAP_SYS_ADMIN set one
  only every 100 ms).

The harness is lowered by its wrapper (`sandbox/inside/wrapper.sh`, told through `NICE_ENV`), not from here: the
wrapper, which notices the harness's end and writes its marker, must not wait behind the harnesses for a core
(marker latency), so it runs at the daemon's priority and puts its session's autogroup back once the harness
ends. Servers are lowered with `lowered(in_new_session(...))`, suite workers (in the daemon's session and
autogroup) with `lowered` alone.

The daemon can also raise itself instead (`staminad start --raise-priority N`, on by default where the OS lets
it: root, or CAP_SYS_NICE): it runs N levels above the box's default, and everything it starts is put back at
the default (less `--child-nice`), so agents and servers compete with other users' work exactly as they would
without the daemon. The daemon's session's autogroup is raised too when the daemon leads its session (a service
manager starts it so; a shell's session is left alone): its suite workers, in that session, then share the
group's weight against the agents' sessions, while inside it they rank below the event loop, which is what
keeps the loop's lag low (with the workers at the loop's own level, its lag p99 was 13x higher). At 500
scenarios on two cores (`benchmarks/bench_concurrency.py`), raised 10 levels against not raised: `status` p99
0.04x (401 -> 15 ms), the loop's lag p99 0.03x (131 -> 3.8 ms) and throughput 2.4x (1.8 -> 4.25 attempts/s): the
loop no longer waits behind a thousand sessions, and the attempts it drives flow.

`--child-nice` is off by default because it trades throughput and scored timings for latency wherever other work
shares the cores: other users' processes then outrank the harnesses and servers too. On this project's shared 2-core
box (load average 20-50 from other jobs), `--child-nice 10` cut `status` p99 to 0.12-0.44x and the loop's lag p99 to
0.07-0.61x, but throughput fell to 0.23-0.5x on 2 cores and servers started by the engine tests missed their start
timeout (an agent's `server_not_listening`). Use it on a box given to the daemon, or where the daemon runs in a CPU
cgroup of its own, as the systemd unit does: there the children's nice value only ranks them below the daemon inside
its cgroup, and other work is weighed against the cgroup as a whole.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

DEFAULT = 0  # off: opt in on a box that runs little else (see the last paragraph)
DEFAULT_RAISE = 10  # levels the daemon raises itself by where it may (`raise_daemon`)
NICE_ENV = "STAMINAD_CHILD_NICE"  # how the harness wrapper (`sandbox/inside/wrapper.sh`) is told the niceness
RAISED_ENV = "STAMINAD_RAISED"  # ... and how far the daemon it inherits its priority from was raised
_set: list[int] = [DEFAULT]  # the daemon's choice, set once at start (`set_child_nice`)
_raised: list[int] = [0]  # the levels the daemon runs above the default (`raise_daemon`)
# Runs as `sh -c SCRIPT sh ARGV...`: sets the session's autogroup nice ($1), then execs ARGV (same pid).
_AUTOGROUP = 'n=$1; shift; echo "$n" > /proc/self/autogroup 2>/dev/null; exec "$@"'


def set_child_nice(n: int) -> None:
    """Make `n` (0-19) the niceness of every process started from now on; 0 starts them at the daemon's own."""
    if not 0 <= n <= 19:
        raise ValueError(f"a child niceness is 0-19, not {n}")
    _set[0] = n


def child_nice() -> int:
    """The niceness levels below the daemon that its children run at."""
    return _set[0]


def raise_daemon(n: int) -> int:
    """Raise this process (every thread it has; call it before it starts more) `n` niceness levels, and its
    session's autogroup with it when it leads its session; the levels obtained: 0 where the OS refuses.

    What this process starts afterwards inherits its priority: agents' processes are put back at the default by
    `lowered`, by as many levels as the daemon then runs above it (`raised`), whether it raised itself or was
    started raised (systemd's `Nice=`, `nice -n -N`)."""
    if not 0 <= n <= 39:
        raise ValueError(f"a raise is 0-39 levels, not {n}")
    before = os.getpriority(os.PRIO_PROCESS, 0)
    after = max(-20, before - n)
    if after != before:
        try:
            set_threads(after)
        except PermissionError:
            with contextlib.suppress(OSError):
                set_threads(before)  # any thread already moved goes back
            after = before
    if after != before and os.getsid(0) == os.getpid():  # the session is the daemon's alone: its group goes too
        with contextlib.suppress(OSError, ValueError, IndexError):
            group = int(Path("/proc/self/autogroup").read_text().split()[-1])
            Path("/proc/self/autogroup").write_text(str(max(-20, group - (before - after))))
    _raised[0] = max(0, -after)
    return before - after


def set_threads(value: int) -> None:
    """Give every thread of this process the nice value `value` (a thread ending meanwhile is skipped);
    PermissionError where raising is not allowed."""
    try:
        threads = [int(p.name) for p in Path("/proc/self/task").iterdir()]
    except OSError:
        threads = [0]  # no /proc: this thread alone
    for tid in threads:
        with contextlib.suppress(ProcessLookupError):
            os.setpriority(os.PRIO_PROCESS, tid, value)


def raised() -> int:
    """The levels the daemon runs above the default priority (0 until `raise_daemon` ran)."""
    return _raised[0]


def lowered(argv: list[str]) -> list[str]:
    """`argv` (an agent's process, a suite worker) run at the box's default priority less the children's niceness:
    the daemon's raise undone, then `child_nice` levels down (in this process's session)."""
    n = child_nice() + raised()
    return ["nice", "-n", str(n), *argv] if n else argv


def in_new_session(argv: list[str]) -> list[str]:
    """`argv`, already run in a session of its own (after `setsid`, or by `start_new_session`), with that
    session's autogroup at the children's niceness too; the nice value itself comes from `lowered`."""
    n = child_nice()
    return ["sh", "-c", _AUTOGROUP, "sh", str(n), *argv] if n else argv
