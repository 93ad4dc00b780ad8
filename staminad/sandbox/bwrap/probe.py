"""Whether the `bwrap` runtime can run here, in one line: bubblewrap installed, and able to make its namespaces."""

from __future__ import annotations

import shutil
import subprocess

import anyio

from staminad.sandbox.bwrap.box import NAMESPACES, system_view

PROBE_TIMEOUT = 10.0  # seconds for one trial enclosure


async def bwrap_problem() -> str | None:
    """None if bwrap can make this runtime's enclosures here; else why not, in one line."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap is not installed (`apt-get install bubblewrap`)"
    argv = [bwrap, *NAMESPACES, *system_view(), "--", "true"]
    try:
        with anyio.fail_after(PROBE_TIMEOUT):
            done = await anyio.run_process(argv, check=False, stdin=subprocess.DEVNULL)
    except TimeoutError:
        return f"bwrap made no enclosure within {PROBE_TIMEOUT:.0f} s"
    except OSError as exc:
        return f"bwrap could not be run ({exc})"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bwrap cannot make its namespaces here ({said[-1] if said else f'exit {done.returncode}'})"
    return None
