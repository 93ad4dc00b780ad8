"""Sweep files and `staminad run`'s input handling: malformed input is one clear line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from staminad.engine.config import MAX_SWEEP_BYTES, SweepError, configurations, load_sweep, parse_sweep
from tests.helpers.sweeps import write_sweep

BAD = {
    "not toml": "name = \n[[[",
    "unknown key": 'name = "x"\ncolour = 1\n[matrix]\nagents = ["reference"]\n',
    "unknown agent": 'name = "x"\n[matrix]\nagents = ["gpt-agent-9000"]\n',
    "bad seeds": 'name = "x"\n[scenarios]\nseeds = "9-1"\n[matrix]\nagents = ["reference"]\n',
    "huge seed range": 'name = "x"\n[scenarios]\nseeds = "0-100000000000"\n[matrix]\nagents = ["reference"]\n',
    "seed 2**63": 'name = "x"\n[scenarios]\nseeds = "9223372036854775808"\n[matrix]\nagents = ["reference"]\n',
    "seed 1_0": 'name = "x"\n[scenarios]\nseeds = "1_0"\n[matrix]\nagents = ["reference"]\n',
    "wrong type": 'name = "x"\n[matrix]\nagents = "reference"\n',
    "negative timeout": 'name = "x"\n[matrix]\nagents = ["reference"]\n[run]\nturn_timeout = -1\n',
    "bad name": 'name = "a b/c"\n[matrix]\nagents = ["reference"]\n',
    "no agents": 'name = "x"\n[matrix]\nagents = []\n',
    "name ..": 'name = ".."\n[matrix]\nagents = ["reference"]\n',
    "name .": 'name = "."\n[matrix]\nagents = ["reference"]\n',
    "hidden name": 'name = ".x"\n[matrix]\nagents = ["reference"]\n',
    "name with slash": 'name = "a/b"\n[matrix]\nagents = ["reference"]\n',
    "empty name": 'name = ""\n[matrix]\nagents = ["reference"]\n',
    "non-ascii name": 'name = "x\u2215y"\n[matrix]\nagents = ["reference"]\n',
    "overlong name": f'name = "{"a" * 101}"\n[matrix]\nagents = ["reference"]\n',
    "unknown workspace": 'name = "x"\n[matrix]\nagents = ["reference"]\n[run]\nworkspace = "nfs"\n',
    "manual on volumes": 'name = "x"\n[matrix]\nagents = ["manual"]\n[run]\nworkspace = "volume"\n',
    "volume on local": 'name = "x"\n[matrix]\nagents = ["reference"]\n[run]\nruntime = "local"\nworkspace = "volume"\n',
}
# Docker reads 0 as "no limit": every limit must be positive, and is checked like the other numbers.
for _key, _value in (
    ("cpus", "0"),
    ("cpus", "-1.5"),
    ("memory_mb", "0"),
    ("memory_mb", "-512"),
    ("pids", "0"),
    ("pids", "-1"),
):
    BAD[f"{_key} {_value}"] = f'name = "x"\n[matrix]\nagents = ["reference"]\n[run]\n{_key} = {_value}\n'
for _language in ("cobol", "Python", "", "python3"):
    BAD[f"language {_language!r}"] = (
        f'name = "x"\n[scenarios]\nlanguage = "{_language}"\n[matrix]\nagents = ["reference"]\n'
    )


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_sweep_files_are_refused(tmp_path: Path, case: str) -> None:
    """Each malformed sweep file raises SweepError naming the file."""
    path = tmp_path / "s.toml"
    path.write_text(BAD[case])
    with pytest.raises(SweepError, match="s.toml"):
        load_sweep(path)


@pytest.mark.parametrize("case", ["not toml", "unknown agent"])
def test_run_command_exits_2_with_one_line(tmp_path: Path, case: str) -> None:
    """`staminad run` on a bad sweep file prints one error line and exits 2."""
    path = tmp_path / "s.toml"
    path.write_text(BAD[case])
    done = subprocess.run(
        [sys.executable, "-m", "staminad.cli", "run", str(path), "--state-dir", str(tmp_path / "st")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_matrix_expands_to_paired_configurations(tmp_path: Path) -> None:
    """agents x retries x feedback expands to one configuration each, with stable names."""
    path = write_sweep(tmp_path, "m", ["reference", "mutant:no-cascade"])
    path.write_text(path.read_text().replace("retries = [2]", 'retries = [0, 2]\nfeedback = ["minimal", "detailed"]'))
    sweep, fingerprint = load_sweep(path)
    names = [c.name for c in configurations(sweep)]
    assert len(names) == 8 and names[0] == "reference R=0 minimal"
    assert load_sweep(path)[1] == fingerprint


def test_unknown_language_lists_the_valid_ones(tmp_path: Path) -> None:
    """An unknown `language` is refused with the list of languages the texts can name."""
    from staminad.bench.readme import LANGUAGE_NAMES

    path = tmp_path / "s.toml"
    path.write_text('name = "x"\n[scenarios]\nlanguage = "cobol"\n[matrix]\nagents = ["reference"]\n')
    with pytest.raises(SweepError) as raised:
        load_sweep(path)
    assert "'cobol'" in str(raised.value) and all(name in str(raised.value) for name in LANGUAGE_NAMES)


@pytest.mark.parametrize("name", ["a", "0", "sweep-1_b.v2", "A" * 100])
def test_safe_names_and_every_known_language_are_accepted(tmp_path: Path, name: str) -> None:
    """Names that are one safe path component load, and so does each known language."""
    from staminad.bench.readme import LANGUAGE_NAMES

    for language in LANGUAGE_NAMES:
        path = tmp_path / "s.toml"
        path.write_text(
            f'name = "{name}"\n[scenarios]\nlanguage = "{language}"\n[matrix]\nagents = ["reference"]\n'
            "[run]\ncpus = 0.5\nmemory_mb = 256\npids = 64\n"
        )
        sweep, _ = load_sweep(path)
        assert (sweep.name, sweep.scenarios.language, sweep.run.pids) == (name, language, 64)


def test_a_later_run_field_at_its_default_leaves_the_fingerprint_of_older_sweeps(tmp_path: Path) -> None:
    """`[run] workspace` left at "mount" is not fingerprinted (a sweep stored before it resumes); "volume" is."""
    import hashlib

    import msgspec

    sweep, fingerprint = load_sweep(write_sweep(tmp_path, "f", ["reference"]))
    before = msgspec.to_builtins(sweep, order="sorted")
    del before["run"]["workspace"]
    del before["run"]["engines"]  # never fingerprinted (see `fingerprint`), and younger than the stored sweeps too
    del before["run"]["outage_budget"]  # never fingerprinted either: how long an outage is waited out
    assert fingerprint == hashlib.sha256(msgspec.json.encode(before)).hexdigest()[:16]
    volume = write_sweep(tmp_path, "f", ["reference"], runtime="docker", extra='workspace = "volume"\n')
    assert load_sweep(volume)[1] != load_sweep(write_sweep(tmp_path, "f", ["reference"], runtime="docker"))[1]


@pytest.mark.parametrize("kind", ["device", "fifo", "directory", "oversized"])
def test_a_sweep_path_that_is_not_a_small_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    """`/dev/zero`, a FIFO, a directory or a file over MAX_SWEEP_BYTES: one line at once, never read whole."""
    path = tmp_path / "s.toml"
    if kind == "device":
        path = Path("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.write_bytes(b"#" * (MAX_SWEEP_BYTES + 1))
    with pytest.raises(SweepError, match="a sweep file is a small TOML file|cannot read"):
        load_sweep(path)
    with pytest.raises(SweepError, match="larger than"):
        parse_sweep(b"#" * (MAX_SWEEP_BYTES + 1), tmp_path / "sent.toml")


@pytest.mark.parametrize("command", ["run", "submit"])
def test_run_and_submit_refuse_dev_zero_in_one_line(tmp_path: Path, command: str) -> None:
    """`staminad run /dev/zero` and `submit /dev/zero` exit 2 with one line (they used to read until memory ran out)."""
    done = subprocess.run(
        [sys.executable, "-m", "staminad.cli", command, "/dev/zero", "--state-dir", str(tmp_path / "st")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "staminad: error: /dev/zero is not a regular file; a sweep file is a small TOML file"
    ]
