"""`staminad done --wait` end to end: a manual sweep on the local runtime, answered by hand, each `done` waiting
for the verdict and printing it with the next prompt's path; the run says `testing...` meanwhile."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from staminad.commands.args import CommandError
from staminad.commands.donewait import locate
from tests.helpers.lines import Lines

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]

CLI = [sys.executable, "-m", "staminad.cli"]
AGENT = Path(__file__).parents[2] / "staminad" / "reference" / "agent.py"


def _sweep(tmp: Path) -> Path:
    path = tmp / "hand.toml"
    path.write_text(
        textwrap.dedent("""
        name = "hand"
        [scenarios]
        seeds = "0"
        turns = 1
        [matrix]
        agents = ["manual"]
        retries = [0]
        [run]
        runtime = "local"
        turn_timeout = 600
        server_start_timeout = 10
        """)
    )
    return path


def _done_wait(marker: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "done", "--marker", marker, "--wait", "--timeout", "300"], capture_output=True, text=True, timeout=400
    )


def test_done_wait_prints_the_verdict_and_the_next_prompt(tmp_path: Path) -> None:
    """Turn 0 answered: `done --wait` says passed and names turn 1's prompt; turn 1 left as is: failed, ended."""
    run = subprocess.Popen(
        [*CLI, "run", str(_sweep(tmp_path)), "--state-dir", str(tmp_path / "state")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines = Lines(run.stdout)  # type: ignore[arg-type]
        first = lines.wait_for("your turn. Prompt: ", timeout=240)
        prompt = first.split("Prompt: ", 1)[1].split(";", 1)[0]
        workspace = first.split("work in ", 1)[1].split(";", 1)[0]
        marker = first.rsplit("--marker ", 1)[1].strip()
        subprocess.run([sys.executable, str(AGENT), "--workspace", workspace, "--prompt-file", prompt], check=True)
        done = _done_wait(marker)
        assert done.returncode == 0, done.stderr
        out = done.stdout.splitlines()
        assert out[0].startswith("waiting for the verdict of t0000-a01-i00")
        verdict = next(line for line in out if line.startswith("t0000-a01-i00: "))
        assert verdict.startswith("t0000-a01-i00: passed: ") and verdict.endswith(" tests")
        next_prompt = next(line for line in out if line.startswith("next prompt: "))
        assert next_prompt.endswith("/control/prompts/t0001-a01-i00.md") and Path(next_prompt[13:]).is_file()
        assert any(line.endswith("--marker " + marker.replace("t0000", "t0001")) for line in out)
        lines.wait_for("turn 0 attempt 1: marked done; testing...", timeout=240)
        second = lines.wait_for("your turn. Prompt: ", timeout=240)  # turn 1: not answered, so its tests fail
        done = _done_wait(second.rsplit("--marker ", 1)[1].strip())
        assert done.returncode == 0, done.stderr
        out = done.stdout.splitlines()
        verdict = next(line for line in out if line.startswith("t0001-a01-i00: "))
        assert verdict.startswith("t0001-a01-i00: failed: ") and " tests failed (" in verdict
        assert out[-1] == "the scenario ended failed: 1 turns passed"
        assert run.wait(timeout=120) == 0
    finally:
        run.kill()
        run.wait()


@pytest.mark.parametrize("path", ["m.json", "x/control/markers/t0000-a01-i00.json", "/s/c1-s0/control/markers/x.json"])
def test_done_wait_refuses_a_path_it_cannot_follow(path: str) -> None:
    """A marker path that does not name an attempt under a state dir's sandboxes is refused in one line."""
    with pytest.raises(CommandError, match="--wait cannot tell the attempt"):
        locate(Path(path))
