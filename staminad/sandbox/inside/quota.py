"""The workspace quota's watchdog: kills the harness once the workspace holds more than its quota.

Runs inside the container (standard library only), as root, started by wrapper.sh beside the harness:
`python3 -I -S quota.py WORKSPACE QUOTA_KB HARNESS_PID OVER_FILE`. Once started it forks nothing (a walk with
`os.scandir`, `os.kill`, `time.sleep`), so an agent that holds the container's pid limit cannot end it the way
it ends a shell loop that forks `du` and `sleep`. Every walk is bounded in entries; a walk cut short counts
what it saw, a floor. It ends with the harness.
"""

import contextlib
import os
import signal
import sys
import time

INTERVAL = 2.0  # seconds between looks
ENTRIES = 500_000  # entries one look may visit


def used_kb(root: str, budget: int = ENTRIES) -> int:
    """KiB of disk the tree at `root` takes (allocated blocks), links never followed, at most `budget` entries."""
    total, stack = 0, [root]
    while stack and budget > 0:
        path = stack.pop()
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    budget -= 1
                    if budget <= 0:
                        break
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += st.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return total // 1024


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def watch(root: str, quota_kb: int, harness: int, over_file: str) -> None:
    while _alive(harness):
        time.sleep(INTERVAL)
        used = used_kb(root)
        if used > quota_kb:
            with contextlib.suppress(OSError), open(over_file, "w") as fh:
                fh.write(f"{used}\n")
            with contextlib.suppress(OSError):
                os.kill(harness, signal.SIGKILL)
            return


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: quota.py WORKSPACE QUOTA_KB HARNESS_PID OVER_FILE", file=sys.stderr)
        return 2
    watch(argv[0], int(argv[1]), int(argv[2]), argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
