"""The CLI as a newcomer meets it: hints name the program as invoked, near misses get a guess, and global
options are taken before the subcommand as after it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "staminad.cli"]


def _sb(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the CLI as `./sb` runs it (with `STAMINAD_PROG=./sb`), with a fresh HOME and no default state dir."""
    env = {k: v for k, v in os.environ.items() if k != "STAMINAD_STATE_DIR"}
    env["STAMINAD_PROG"] = "./sb"
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


def test_usage_errors_and_hints_say_sb_under_sb(tmp_path: Path) -> None:
    """Under `./sb`, a usage error starts `./sb` and the no-daemon hint says `./sb start`, never `staminad start`."""
    done = _sb("reprot")
    assert done.returncode == 2 and done.stderr.startswith("./sb: error: "), done.stderr
    done = _sb("status", "--state-dir", str(tmp_path))
    assert done.returncode == 1 and "`./sb start`" in done.stderr and "staminad start" not in done.stderr
    listed = _sb("agents", "list")
    assert listed.returncode == 0 and "`./sb done`" in listed.stdout and "staminad done" not in listed.stdout


def test_a_misspelt_subcommand_gets_did_you_mean() -> None:
    """`./sb reprot` names `report` in its one error line."""
    done = _sb("reprot")
    assert "did you mean 'report'?" in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ('"mutant:no-cascade"', '"mutant:no-cascde"', "did you mean 'no-cascade'?"),
        ('"reference"', '"refrence"', "did you mean 'reference'?"),
        ('"reference"', '"fault:hnag"', "did you mean 'fault:hang'?"),
        ('"reference"', '"cladue-code"', "did you mean 'claude-code'?"),
        ('naming = "themed"', 'naming = "themd"', "did you mean 'themed'?"),
        ('naming = "themed"', 'sampler = "weigted"', "did you mean 'weighted'?"),
        ('runtime = "auto"', 'runtime = "dokcer"', "did you mean 'docker'?"),
        ("parallel = 2", "paralel = 2", "did you mean 'parallel'?"),
    ],
)
def test_a_misspelt_sweep_value_gets_did_you_mean(tmp_path: Path, old: str, new: str, says: str) -> None:
    """A typo in an agent name or a choice of the sweep file is refused with the closest name, not every name."""
    text = (Path(__file__).resolve().parent.parent / "examples" / "quickstart.toml").read_text()
    assert old in text
    sweep = tmp_path / "s.toml"
    sweep.write_text(text.replace(old, new, 1))
    done = _sb("run", str(sweep), "--state-dir", str(tmp_path / "state"))
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert "rounded-avg" not in done.stderr  # no list of every mutant for a typo
    assert not (tmp_path / "state" / "staminad.db").exists()


def test_a_global_option_before_the_subcommand_is_taken(tmp_path: Path) -> None:
    """`./sb --state-dir D report` reports on D (here: no store yet) instead of `invalid choice`."""
    done = _sb("--state-dir", str(tmp_path), "report")
    assert done.returncode == 2 and f"no state store at {tmp_path}" in done.stderr, done.stderr
    assert "invalid choice" not in done.stderr


@pytest.mark.slow  # 6.4 s of CPU (over the fast tier's budget): ./sb, then the whole Textual app imported
def test_sb_tui_runs_the_monitor_a_clone_has_no_stamina_tui_on_path() -> None:
    """`./sb tui ARGS` is `stamina-tui ARGS` inside the project's environment, not an invalid subcommand."""
    sb = Path(__file__).resolve().parents[1] / "sb"
    env = {k: v for k, v in os.environ.items() if k != "STAMINAD_STATE_DIR"}
    done = subprocess.run([str(sb), "tui", "--help"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and done.stdout.startswith("usage: stamina-tui"), done.stdout + done.stderr
