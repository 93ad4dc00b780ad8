"""The web stacks of the sandbox image: the Python packages of `bench.environment`, installed offline from a lock.

`locks/stacks.json` pins every wheel the image holds: the packages the agent's README names and all their
dependencies. A build downloads exactly those wheels on this host for the base's Python and C library (binary
wheels only, nothing compiles), and mmdebstrap's customize hooks (`HOOKS`, part of the recipe and its hash, like
the lock's digest) copy them into the image as a read-only wheelhouse, install the README's packages from it
with the image's own pip (so they are compiled for its Python and `python3 -c 'import flask'` just works), and
write `/etc/pip.conf` so every pip in the sandbox, a virtual environment's too, installs from that wheelhouse
and never looks for an index.

Relock after changing a version in `bench.environment` (on a host that reaches PyPI): `staminad image
lock-stacks` (`relock` and `write_lock`).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from staminad.bench.environment import WHEELHOUSE, python_pins

LOCK = Path(__file__).with_name("locks") / "stacks.json"
WHEELHOUSE_ENV = "STAMINABENCH_WHEELHOUSE"  # the host directory mmdebstrap's hooks copy in
PIP_CONF = f"[global]\\nno-index = true\\nfind-links = {WHEELHOUSE}\\nbreak-system-packages = true\\n"
# Run by mmdebstrap in the new root ($1) after the packages are in; the wheelhouse directory comes from the
# environment so the recipe (and its hash) names no host path.
HOOKS = (
    f'cp -r "${WHEELHOUSE_ENV}" "$1{WHEELHOUSE}" && chmod -R a+rX,go-w "$1{WHEELHOUSE}"',
    f"printf '{PIP_CONF}' > \"$1/etc/pip.conf\"",
    # A clean environment: the host's PIP_* variables (a PIP_FIND_LINKS of its own) would override pip.conf.
    f'chroot "$1" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root python3 -m pip install --quiet '
    f"--no-cache-dir --no-index --find-links {WHEELHOUSE} -r {WHEELHOUSE}/requirements.txt",
)


class StackError(RuntimeError):
    """The stacks' wheels could not be fetched; the message says which step failed."""


def pins() -> list[str]:
    """Every `name==version` the wheelhouse holds (the lock)."""
    return list(json.loads(LOCK.read_text())["pins"])


def digest() -> str:
    """What of the stacks changes the image: the lock and the README's packages, for the recipe's hash."""
    text = LOCK.read_bytes() + "\n".join(python_pins()).encode()
    return hashlib.sha256(text).hexdigest()[:12]


def _pip(args: list[str], timeout: float) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise StackError(f"pip {args[0]} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")


def fetch(dest: Path, target: list[str], timeout: float = 900) -> Path:
    """Download the lock's wheels into `dest` for `target` (pip's --python-version/--platform flags), with a
    requirements file of the README's packages beside them; returns `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    locked = dest / "lock.txt"
    locked.write_text("\n".join(pins()) + "\n")
    _pip(["download", "--quiet", "--no-deps", "--dest", str(dest), *target, "-r", str(locked)], timeout)
    locked.unlink()
    (dest / "requirements.txt").write_text("\n".join(python_pins()) + "\n")
    return dest


def relock(target: list[str], timeout: float = 900) -> list[str]:
    """Resolve the README's packages with their dependencies for `target`; the lock's pins, sorted."""
    with tempfile.TemporaryDirectory(prefix="staminabench-relock-") as tmp:
        _pip(["download", "--quiet", "--dest", tmp, *target, *python_pins()], timeout)
        found = []
        for wheel in Path(tmp).glob("*.whl"):
            name, version = wheel.name.split("-")[:2]
            found.append(f"{name.replace('_', '-').lower()}=={version}")
    return sorted(found)


def write_lock(found: list[str], source: str) -> None:
    """Replace the lock with `found` (from `relock`), saying where it came from."""
    LOCK.write_text(json.dumps({"source": source, "pins": found}, indent=1) + "\n")
