"""What every runtime that starts processes on the daemon's own machine shares: the environment they start
from (`base_env`, an allow-list), the resource limits they run under (`LIMITS`), and running a launcher that
forks and returns at once (`run_briefly`). `local` and the composed runtimes (`boxed`) both use them.
"""

from __future__ import annotations

import os
import subprocess

PASSED_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")  # the daemon's variables a sandboxed process may see

# Resource limits for sandboxed processes, applied by util-linux prlimit (no preexec_fn: the daemon
# has threads, and forking with a Python callback in a threaded process can deadlock).
LIMITS = ["prlimit", "--core=0", "--nofile=4096", f"--fsize={4 << 30}"]


def base_env() -> dict[str, str]:
    """The environment every sandboxed process starts from: the allow-list, nothing else of the daemon's."""
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


def run_briefly(argv: list[str], env: dict[str, str], timeout: float = 10.0) -> None:
    """Run `argv` (a launcher that forks and returns at once) to its end; TimeoutError if it takes `timeout`."""
    try:
        quiet = subprocess.DEVNULL
        subprocess.run(argv, stdin=quiet, stdout=quiet, stderr=quiet, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"{argv[0]} did not return within {timeout:.0f} s") from None
