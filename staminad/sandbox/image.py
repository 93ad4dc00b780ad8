"""Building the sandbox image without a registry: a Debian root file system from Debian's packages.

`mmdebstrap` writes a minimal Debian tree as a tar stream, which `docker import` turns into an
image. The tag is content-addressed (a hash of the recipe), so building twice is a no-op and a
changed recipe gets a new tag; `latest` points at the newest build. Agent harness layers, and the
Node.js and Rust toolchains for the language ablation, go on top with the same mechanism.

The recipe also fixes the sandbox's users and the directories the runtime mounts over: the agent
runs as `agent` (AGENT_UID), never as root; /opt/stamina (root, mode 0700) holds the control
directory only the runtime's root-side processes can reach; `iptables` is there for the short-lived
helper that seals each container's network namespace (the sandbox container itself never has
NET_ADMIN).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec

BASE_PACKAGES = ("python3", "bash", "procps", "ca-certificates", "coreutils", "util-linux", "iptables")
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
    "node": ("nodejs", "npm"),
    "rust": ("rustc", "cargo"),
}
REPO = "staminabench/sandbox"


class ImageError(RuntimeError):
    """The image could not be built; the message says what is missing."""


class Recipe(msgspec.Struct, frozen=True):
    suite: str
    variant: str
    packages: tuple[str, ...]
    setup: tuple[str, ...] = ()
    layout: str = ""

    def tag(self) -> str:
        digest = hashlib.sha256(msgspec.json.encode(self)).hexdigest()[:12]
        return f"{REPO}:{digest}"


def recipe(layer: str = "base", suite: str = "bookworm") -> Recipe:
    if layer not in LAYERS:
        raise ImageError(f"unknown layer {layer!r}; choose from {', '.join(LAYERS)}")
    return Recipe(suite=suite, variant="minbase", packages=tuple(sorted({*BASE_PACKAGES, *LAYERS[layer]})),
                  setup=SETUP, layout=LAYOUT)


def image_exists(tag: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0


def build(layer: str = "base", suite: str = "bookworm", mirror: str | None = None, latest: bool = True,
          timeout: float = 1800) -> tuple[str, bool]:
    """Build (or find) the image; returns (tag, built_now)."""
    r = recipe(layer, suite)
    tag = r.tag()
    if not image_exists(tag):
        for tool in ("mmdebstrap", "docker"):
            if shutil.which(tool) is None:
                raise ImageError(f"{tool} is not installed (apt-get install mmdebstrap docker.io)")
        cmd = ["mmdebstrap", f"--variant={r.variant}", f"--include={','.join(r.packages)}",
               *(f"--customize-hook={hook}" for hook in r.setup), suite, "-"]
        if mirror:
            cmd.append(mirror)
        debootstrap = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert debootstrap.stdout is not None
        imported = subprocess.run(["docker", "import", "--change", "CMD [\"sh\"]", "--change",
                                   f"LABEL {LAYOUT_LABEL}={r.layout}", "-", tag],
                                  stdin=debootstrap.stdout, capture_output=True, timeout=timeout)
        debootstrap.stdout.close()
        _, err = debootstrap.communicate(timeout=timeout)
        if debootstrap.returncode != 0:
            raise ImageError(f"mmdebstrap failed: {err.decode(errors='replace').strip().splitlines()[-1:]}")
        if imported.returncode != 0:
            raise ImageError(f"docker import failed: {imported.stderr.decode(errors='replace').strip()}")
        built = True
    else:
        built = False
    if latest:
        name = f"{REPO}:latest" if layer == "base" else f"{REPO}:{layer}"
        subprocess.run(["docker", "tag", tag, name], check=True, capture_output=True)
    return tag, built


def harness_tag(name: str) -> str:
    """The content-addressed tag of a harness layer: its install pin on top of the current base image."""
    from staminad.agents.harnesses import HARNESSES

    if name not in HARNESSES:
        raise ImageError(f"unknown harness {name!r}; choose from {', '.join(HARNESSES)}")
    carry = f"|{HARNESSES[name].carry}" if HARNESSES[name].carry else ""
    spec = f"{recipe().tag()}|{HARNESSES[name].install}|{PYTHON_TARGET}{carry}"
    return f"{REPO}:{name}-{hashlib.sha256(spec.encode()).hexdigest()[:12]}"


PYTHON_TARGET = ("3.11", "manylinux2014_x86_64")  # the base image's Python (Debian bookworm) and platform


def build_harness(name: str, workdir: Path, timeout: float = 1800) -> tuple[str, bool]:
    """Build (or find) a harness layer: packages fetched on this host, installed into the image offline.

    PyPI harnesses are installed with pip into a staging tree for the image's Python and platform (binary
    wheels only, so nothing compiles); the tree is copied into a container of the base image under
    /opt/harnesses/NAME and committed. npm harnesses need `npm pack` tarballs from a host that reaches the
    npm registry; this machine's image builds say so in one line.
    """
    from staminad.agents.harnesses import HARNESS_ROOT, HARNESSES

    tag = harness_tag(name)
    alias = f"{REPO}:{name}"
    if image_exists(tag):
        subprocess.run(["docker", "tag", tag, alias], check=True, capture_output=True)
        return tag, False
    install = HARNESSES[name].install
    kind, _, packages = install.partition(":")
    if kind != "pypi":
        raise ImageError(f"{name} installs from {kind} ({packages}); build its layer on a host that reaches that "
                         "registry (npm pack, then the same docker cp + commit)")
    base, _ = build()
    tree = workdir / "harnesses"  # copied to /opt, giving HARNESS_ROOT/NAME
    stage = tree / name
    shutil.rmtree(tree, ignore_errors=True)
    first, *rest = packages.split()
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target", str(stage),
           "--python-version", PYTHON_TARGET[0], "--platform", PYTHON_TARGET[1], "--only-binary=:all:",
           "--implementation", "cp",
           # pip 23 does not read manylinux2014 as its newer spelling: name both (Claude Code's wheel is _2_17).
           "--platform", PYTHON_TARGET[1].replace("manylinux2014", "manylinux_2_17")]
    # The harness itself without its optional heavy dependencies (datasets, UIs); then what it imports.
    deps = [*rest, *HARNESS_DEPS.get(name, ())]
    for args in ([*pip, "--no-deps", first], *([[*pip, *deps]] if deps else [])):
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise ImageError(f"pip could not fetch {name}: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    if HARNESSES[name].carry:
        _keep_only(stage, HARNESSES[name].carry)
    container = f"staminabench-build-{name}-{os.getpid()}"
    try:
        for cmd in (["docker", "create", "--name", container, base, "true"],
                    ["docker", "cp", str(tree), f"{container}:{Path(HARNESS_ROOT).parent}"],
                    ["docker", "commit", "--change", f"LABEL staminabench.harness={install}", container, tag]):
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            if done.returncode != 0:
                raise ImageError(f"{' '.join(cmd[:2])} failed: {done.stderr.strip()}")
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)
        shutil.rmtree(tree, ignore_errors=True)
    subprocess.run(["docker", "tag", tag, alias], check=True, capture_output=True)
    return tag, True


def _keep_only(stage: Path, carry: tuple[tuple[str, str], ...]) -> None:
    """Reduce an installed tree to the files a harness runs (its binary), at their places in the layer."""
    kept = stage.parent / f"{stage.name}.kept"
    for src, dst in carry:
        if not (stage / src).is_file():
            raise ImageError(f"the package has no {src}")
        (kept / dst).parent.mkdir(parents=True, exist_ok=True)
        os.replace(stage / src, kept / dst)
    shutil.rmtree(stage)
    os.replace(kept, stage)


# What each PyPI harness needs at run time beyond itself (its full dependency list pulls in UIs and datasets).
HARNESS_DEPS: dict[str, tuple[str, ...]] = {
    "mini-swe-agent": ("pyyaml", "requests", "jinja2", "pydantic>=2", "tenacity", "rich", "python-dotenv",
                       "platformdirs", "openai", "typer"),
}
