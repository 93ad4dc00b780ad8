"""The sandbox image's recipe: what a base holds, per Debian suite, and the content-addressed tag that names it.

The recipe fixes the sandbox's users and the directories the runtime mounts over: the agent runs as `agent`
(AGENT_UID), never as root; /opt/stamina (root, mode 0700) holds the control directory only the runtime's
root-side processes can reach; `iptables` is there for the short-lived helper that seals each container's
network namespace (the sandbox container itself never has NET_ADMIN). Every layer carries the web stacks the
agent's README names (`staminad.sandbox.docker.stacks`): Python packages installed and kept as an offline
wheelhouse for pip, and in the `node` layer Debian's Express. Two Debian suites are bases: bookworm (Python
3.11, the default) and trixie (Python 3.13); wheels are chosen for a base's Python and C library.
"""

from __future__ import annotations

import hashlib

import msgspec

from staminad.bench.environment import NODE_PACKAGES
from staminad.sandbox.docker import stacks

BASE_PACKAGES = (
    *("python3", "bash", "procps", "ca-certificates", "coreutils", "util-linux", "iptables"),
    # `python` too, as agents often write it; `pip install` and `python3 -m venv`, offline (see stacks)
    *("python-is-python3", "python3-pip", "python3-venv"),
)
AGENT_UID = 1000  # the `agent` user (and group) of the image
LAYOUT_LABEL = "staminabench.layout"
LAYOUT = "sealed-1"  # what the docker runtime needs of an image: the agent user, /opt/stamina, iptables
PRIVATE_DIR = "/opt/stamina"  # root-only (0700): the control directory is mounted below it
# Run in the new root ($1) before it is packed: users and mount points are part of the recipe (and its hash).
SETUP = (
    f'echo "agent:x:{AGENT_UID}:{AGENT_UID}:sandbox agent:/workspace/.home:/bin/bash" >> "$1/etc/passwd"',
    f'echo "agent:x:{AGENT_UID}:" >> "$1/etc/group"',
    'echo "agent:!:19000:0:99999:7:::" >> "$1/etc/shadow"',
    f'mkdir -p "$1/workspace" "$1/stamina" "$1/harness" "$1{PRIVATE_DIR}" && chmod 0700 "$1{PRIVATE_DIR}"',
)
LAYERS = {
    "base": (),
    "node": ("nodejs", "npm", *(package for package, _, _ in NODE_PACKAGES)),
    "rust": ("rustc", "cargo"),
}
REPO = "staminabench/sandbox"
DEFAULT_SUITE = "bookworm"


class Suite(msgspec.Struct, frozen=True):
    """A Debian release usable as a base: the Python it ships and its C library (for wheel tags)."""

    python: str
    glibc: tuple[int, int]

    def python_target(self) -> tuple[str, tuple[str, ...]]:
        """The Python version and the wheel platform tags this base can run (manylinux up to its glibc)."""
        major, minor = self.glibc
        tags = ("manylinux2014_x86_64", *(f"manylinux_{major}_{m}_x86_64" for m in range(17, minor + 1)))
        return self.python, tags


SUITES = {"bookworm": Suite(python="3.11", glibc=(2, 36)), "trixie": Suite(python="3.13", glibc=(2, 41))}


class ImageError(RuntimeError):
    """The image could not be built; the message says what is missing."""


class Recipe(msgspec.Struct, frozen=True):
    suite: str
    variant: str
    packages: tuple[str, ...]
    setup: tuple[str, ...] = ()
    layout: str = ""
    stacks: str = ""  # the digest of the web stacks' lock, installed by the setup's last hooks

    def tag(self) -> str:
        digest = hashlib.sha256(msgspec.json.encode(self)).hexdigest()[:12]
        return f"{REPO}:{digest}"


def recipe(layer: str = "base", suite: str = "bookworm") -> Recipe:
    if layer not in LAYERS:
        raise ImageError(f"unknown layer {layer!r}; choose from {', '.join(LAYERS)}")
    if suite not in SUITES:
        raise ImageError(f"unknown Debian suite {suite!r}; choose from {', '.join(SUITES)}")
    return Recipe(
        suite=suite,
        variant="minbase",
        packages=tuple(sorted({*BASE_PACKAGES, *LAYERS[layer]})),
        setup=(*SETUP, *stacks.HOOKS),
        layout=LAYOUT,
        stacks=stacks.digest(),
    )


def wheel_target(suite: Suite) -> list[str]:
    """pip's flags choosing binary wheels for this base's CPython and C library."""
    python, platforms = suite.python_target()
    return [
        "--python-version",
        python,
        *(f"--platform={p}" for p in platforms),
        "--only-binary=:all:",
        "--implementation",
        "cp",
    ]
