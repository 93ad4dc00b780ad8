"""A harness layer's wheel set: the release's lock as pip constraints, and a Python ceiling ignored for one wheel."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

from staminad.agents.harnesses import HARNESSES
from staminad.sandbox.docker.image import SUITES
from staminad.sandbox.docker.wheelset import LOCKS, download_flags, fingerprint, unmet

OPENHANDS = HARNESSES["openhands"].layer.ceiling  # what its record hands the layer build

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def _wheel(wheels: Path, name: str, version: str, requires_python: str) -> None:
    """A minimal pure-Python wheel whose METADATA declares `requires_python`."""
    dist = f"{name.replace('-', '_')}-{version}"
    with zipfile.ZipFile(wheels / f"{dist}-py3-none-any.whl", "w") as z:
        z.writestr(
            f"{dist}.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Python: {requires_python}\n\nbody\n",
        )
        z.writestr(
            f"{dist}.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        z.writestr(f"{dist}.dist-info/RECORD", "")


def _target() -> list[str]:
    python, platforms = SUITES["trixie"].python_target()
    return ["--python-version", python, *(f"--platform={p}" for p in platforms), "--only-binary=:all:"]


def test_only_the_harness_own_ceiling_is_ignored(tmp_path: Path) -> None:
    """The CLI's `==3.12.*` passes on 3.13; a dependency that leaves out 3.13 is named, in one line."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "openhands", "1.12.1", "==3.12.*")
    _wheel(wheels, "openhands-sdk", "1.11.4", ">=3.12")
    assert unmet("openhands", OPENHANDS, PIP, _target(), wheels, 120) == ""
    _wheel(wheels, "old-dep", "1.0", "<3.13")
    problem = unmet("openhands", OPENHANDS, PIP, _target(), wheels, 120)
    assert problem.startswith("openhands: a dependency does not run on the base's Python: ") and "old-dep" in problem
    assert "\n" not in problem


def test_a_changed_ceiling_is_refused_until_checked_anew(tmp_path: Path) -> None:
    """A CLI wheel declaring another Requires-Python than the known one stops the build (it may run on 3.13 now)."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "openhands", "1.17.0", ">=3.12")
    assert unmet("openhands", OPENHANDS, PIP, _target(), wheels, 120) == (
        "openhands: openhands-1.17.0-py3-none-any.whl declares Requires-Python '>=3.12', not '==3.12.*': check it anew"
    )
    assert unmet("codex", None, PIP, _target(), wheels, 120) == ""  # no ceiling declared: nothing checked


def test_the_lock_is_the_pinned_release_and_moves_the_layer_tag(tmp_path: Path) -> None:
    """The lock names the harness's pinned version, reaches pip as constraints, and is part of the layer's tag."""
    lock = json.loads((LOCKS / "openhands.json").read_text())
    assert lock["install"] == HARNESSES["openhands"].install.removeprefix("pypi:")
    assert lock["install"] in lock["pins"]
    flags = download_flags("openhands", OPENHANDS, tmp_path)
    assert flags[0] == "--ignore-requires-python" and flags[1] == "--constraint"
    assert Path(flags[2]).read_text().split() == lock["pins"]
    assert fingerprint("openhands", OPENHANDS) and fingerprint("codex", None) == ""
    assert download_flags("codex", None, tmp_path) == []
