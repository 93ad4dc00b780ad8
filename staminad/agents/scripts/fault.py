"""Fault-injecting agent: really does the named fault inside the sandbox, else acts as the reference agent.

python3 fault.py --fault self-kill|hang|crash|no-server [--once] --workspace DIR --prompt-file FILE

With --once the fault happens on the first call only (a transient infrastructure failure that an
infra retry recovers from); the state of that lives in the workspace, like a harness session.
Standard library only.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(os.path.abspath(__file__)).parent
sys.path.insert(0, str(HERE.parent.parent / "reference"))

from agent import run  # type: ignore[import-not-found]  # noqa: E402 - the reference agent, in the sandbox


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fault", required=True, choices=["self-kill", "hang", "crash", "no-server"])
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
    run(args.workspace, prompt, None, False)
    if inject and args.fault == "no-server":
        script = args.workspace / "run_server.sh"
        script.write_text("#!/usr/bin/env bash\n# never listens on the port\nexec sleep 100000\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
