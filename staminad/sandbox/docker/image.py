"""Building the sandbox image without a registry: a Debian root file system from Debian's packages.

`mmdebstrap` writes a minimal Debian tree as a tar stream, which `docker import` turns into an
image. The tag is content-addressed (a hash of the recipe), so building twice is a no-op and a
changed recipe gets a new tag; `latest` points at the newest build. Agent harness layers, and the
Node.js and Rust toolchains for the language ablation, go on top with the same mechanism; a harness's layer
is the `LayerSpec` its record hands down (`staminad.agents.layers`): this module knows no harness by name.
Two Debian suites are bases: bookworm (Python 3.11, the default) and trixie (Python 3.13) for the
harnesses that need a newer Python; each harness names its base, and its layer's wheels are chosen
for that base's Python and C library. What a base holds is its recipe (`staminad.sandbox.docker.recipe`,
whose names this module re-exports).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import msgspec

from staminad.sandbox.docker import stacks
from staminad.sandbox.docker.buildshow import Tail, say_stderr, step, tag_lock
from staminad.sandbox.docker.recipe import (
    AGENT_UID,
    BASE_PACKAGES,
    DEFAULT_SUITE,
    LAYERS,
    LAYOUT,
    LAYOUT_LABEL,
    PRIVATE_DIR,
    REPO,
    SETUP,
    SUITES,
    ImageError,
    Recipe,
    Suite,
    recipe,
    wheel_target,
)
from staminad.sandbox.docker.wheelset import download_flags, fingerprint, unmet

__all__ = [  # the recipe's names, re-exported for the modules that build or name images
    "AGENT_UID",
    "BASE_PACKAGES",
    "DEFAULT_SUITE",
    "LAYERS",
    "LAYOUT",
    "LAYOUT_LABEL",
    "PRIVATE_DIR",
    "REPO",
    "SETUP",
    "SUITES",
    "ImageError",
    "LayerSpec",
    "Recipe",
    "Suite",
    "build",
    "build_harness",
    "harness_tag",
    "image_exists",
    "recipe",
    "wheel_target",
]


def image_exists(tag: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0


def build(
    layer: str = "base",
    suite: str = DEFAULT_SUITE,
    mirror: str | None = None,
    latest: bool = True,
    timeout: float = 1800,
    say: Callable[[str], None] = say_stderr,
) -> tuple[str, bool]:
    """Build (or find) the image; returns (tag, built_now). One build per tag machine-wide (`tag_lock`), its
    steps' progress said through `say`."""
    r = recipe(layer, suite)
    tag = r.tag()
    with tag_lock(tag, say):
        built = _build(r, tag, suite, mirror, timeout, say)
    if latest:
        name = f"{REPO}:latest" if layer == "base" else f"{REPO}:{layer}"
        if suite != DEFAULT_SUITE:  # `latest` and the layer names stay the default suite's
            name = f"{REPO}:{suite}" if layer == "base" else f"{REPO}:{layer}-{suite}"
        subprocess.run(["docker", "tag", tag, name], check=True, capture_output=True)
    return tag, built


def _build(r: Recipe, tag: str, suite: str, mirror: str | None, timeout: float, say: Callable[[str], None]) -> bool:
    """Build the image `tag` from the recipe unless it is there; whether it was built now."""
    if image_exists(tag):
        return False
    for tool in ("mmdebstrap", "docker"):
        if shutil.which(tool) is None:
            raise ImageError(f"{tool} is not installed (apt-get install mmdebstrap docker.io)")
    with tempfile.TemporaryDirectory(prefix="staminabench-wheelhouse-") as tmp:
        with step(say, f"fetching the web stacks' wheels with pip ({len(stacks.pins())} pinned)"):
            try:
                wheels = stacks.fetch(Path(tmp) / "wheelhouse", wheel_target(SUITES[suite]), timeout)
            except stacks.StackError as exc:
                raise ImageError(str(exc)) from None
        _debootstrap(r, tag, suite, mirror, timeout, say, wheels)
    return True


def _debootstrap(
    r: Recipe, tag: str, suite: str, mirror: str | None, timeout: float, say: Callable[[str], None], wheels: Path
) -> None:
    """mmdebstrap the recipe into `docker import`, its hooks copying and installing the wheelhouse `wheels`."""
    cmd = [
        "mmdebstrap",
        f"--variant={r.variant}",
        f"--include={','.join(r.packages)}",
        *(f"--customize-hook={hook}" for hook in r.setup),
        suite,
        "-",
    ]
    if mirror:
        cmd.append(mirror)
    say(f"building {tag}: mmdebstrap {suite} ({len(r.packages)} packages) into docker import; minutes")
    debootstrap = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, stacks.WHEELHOUSE_ENV: str(wheels)}
    )
    assert debootstrap.stdout is not None and debootstrap.stderr is not None
    tail = Tail(debootstrap.stderr)
    with step(say, "mmdebstrap | docker import", lambda: tail.last):
        imported = subprocess.run(
            [
                "docker",
                "import",
                "--change",
                'CMD ["sh"]',
                "--change",
                f"LABEL {LAYOUT_LABEL}={r.layout}",
                "-",
                tag,
            ],
            stdin=debootstrap.stdout,
            capture_output=True,
            timeout=timeout,
        )
        debootstrap.stdout.close()
        debootstrap.wait(timeout=timeout)
    err = tail.text()
    debootstrap.stderr.close()
    if debootstrap.returncode != 0:
        # `docker import` made an image of the stream cut short: never leave it under the tag, which says "built".
        subprocess.run(["docker", "image", "rm", "--force", tag], capture_output=True)
        lines = [line for line in err.strip().splitlines() if not line.startswith("I: ")]
        raise ImageError(f"mmdebstrap failed: {lines[-3:]}")
    if imported.returncode != 0:
        raise ImageError(f"docker import failed: {imported.stderr.decode(errors='replace').strip()}")


class LayerSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What a harness's image layer holds, handed down by the harness's record (`staminad.agents.harnesses`), so
    the build knows no harness by name."""

    name: str
    install: str  # "pypi:PKG==V [MORE==V ...]" (built here) or "npm:PKG@V" (refused here, in one line)
    root: str  # the layer installs the harness under ROOT/NAME
    base: str = DEFAULT_SUITE  # the Debian suite of the base image it goes on
    deps: tuple[str, ...] = ()  # when set: the first package without dependencies, then these
    bins: tuple[tuple[str, str], ...] = ()  # (bin/NAME, its bundled binary's path in the installed tree)
    sdists: tuple[str, ...] = ()  # pure-Python dependencies published only as source, built into wheels first
    carry: tuple[tuple[str, str], ...] = ()  # when set, the layer keeps only these (tree path, layer path)
    ceiling: tuple[str, str] | None = None  # (its wheel's prefix, the Requires-Python ignored for it alone)


def harness_tag(spec: LayerSpec) -> str:
    """The content-addressed tag of a harness layer: its install pin, dependencies and sdists on its base image."""
    if spec.base not in SUITES:
        raise ImageError(f"{spec.name}: unknown Debian suite {spec.base!r}; choose from {', '.join(SUITES)}")
    target = SUITES[spec.base].python_target()
    carry = f"|{spec.carry}" if spec.carry else ""
    bins = sorted(spec.bins)
    ceiling = fingerprint(spec.name, spec.ceiling)
    # What is installed beside the harness (its pinned dependencies, its sdists built on the host) is part of the
    # layer too: a changed pin is a new tag, never the old layer found under the old one.
    extra = f"|deps={sorted(spec.deps)}" if spec.deps else ""
    extra += f"|sdists={sorted(spec.sdists)}" if spec.sdists else ""
    key = f"{recipe(suite=spec.base).tag()}|{spec.install}|{target}|{bins}{carry}{ceiling}|{_COMPILE}{extra}"
    return f"{REPO}:{spec.name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def build_harness(
    spec: LayerSpec, workdir: Path, timeout: float = 1800, say: Callable[[str], None] = say_stderr
) -> tuple[str, bool]:
    """Build (or find) a harness layer: packages fetched on this host, installed into the image offline.

    PyPI harnesses are installed with pip into a staging tree for the Python and platform of the base
    the harness names (binary wheels only, so nothing compiles); the tree is copied into a container of
    that base image under /opt/harnesses/NAME and committed. Its bin/ holds the harness's commands:
    console scripts (their shebang pointed at the image's python3) and links to bundled binaries. npm
    harnesses need `npm pack` tarballs from a host that reaches the npm registry; this machine's image
    builds say so in one line.
    """
    tag = harness_tag(spec)
    with tag_lock(tag, say):
        built = _build_harness(spec, tag, workdir, timeout, say)
    subprocess.run(["docker", "tag", tag, f"{REPO}:{spec.name}"], check=True, capture_output=True)
    return tag, built


def _build_harness(h: LayerSpec, tag: str, workdir: Path, timeout: float, say: Callable[[str], None]) -> bool:
    """`build_harness` under the tag's lock: whether the layer was built now."""
    name = h.name
    if image_exists(tag):
        return False
    kind, _, packages = h.install.partition(":")
    if kind != "pypi":
        raise ImageError(
            f"{name} installs from {kind} ({packages}); build its layer on a host that reaches that "
            "registry (npm pack, then the same docker cp + commit)"
        )
    base, _ = build(suite=h.base, say=say)
    tree = workdir / Path(h.root).name  # copied to the root's parent, giving ROOT/NAME
    stage = tree / name
    shutil.rmtree(tree, ignore_errors=True)
    with step(say, f"fetching {name}'s packages with pip ({packages})"):
        _fetch(h, packages.split(), workdir / "wheels", stage, timeout)
    if h.carry:
        _keep_only(stage, h.carry)
    _commands(stage, h.bins)
    container = f"staminabench-build-{name}-{os.getpid()}"
    try:
        for cmd in (
            [
                "docker",
                "create",
                "--network",
                "none",
                "--name",
                container,
                base,
                "sh",
                "-c",
                _COMPILE.format(root=h.root, name=name),
            ],
            ["docker", "cp", str(tree), f"{container}:{Path(h.root).parent}"],
            ["docker", "start", "--attach", container],
            [
                "docker",
                "commit",
                "--change",
                'CMD ["sh"]',
                "--change",
                f"LABEL staminabench.harness={h.install}",
                "--change",
                f"LABEL staminabench.base={h.base}",
                container,
                tag,
            ],
        ):
            with step(say, " ".join(cmd[:2])):
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            if done.returncode != 0:
                raise ImageError(f"{' '.join(cmd[:2])} failed: {done.stderr.strip()}")
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)
        shutil.rmtree(tree, ignore_errors=True)
    return True


# Byte-compiled by the base's own Python in the layer: pip compiled for the host's, and the agent cannot write
# beside the sources, so every call would compile them again (OpenHands: 75 s to start, 10 s compiled). A file no
# version compiles (a package's Python 2 fixture) is one no import reaches: it stays source only.
_COMPILE = "python3 -m compileall -q -j0 {root}/{name} > /dev/null || true"


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


def _fetch(h: LayerSpec, packages: list[str], wheels: Path, stage: Path, timeout: float) -> None:
    """Download the harness's wheels for its base's Python and platform, then unpack them into `stage`.

    Two steps because pip checks Requires-Python against the interpreter running it when installing;
    `pip download` checks it against the target version, after which the wheel set is fixed.
    Pure-Python packages published only as source (`LayerSpec.sdists`) are built into wheels here first. A
    harness whose own wheel's Requires-Python leaves out the base's Python has that ceiling alone ignored
    (`staminad.sandbox.docker.wheelset`, which also pins a release's lock).
    """
    name = h.name
    target = [*wheel_target(SUITES[h.base]), "--find-links", str(wheels)]
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir(parents=True)
    first, *rest = packages
    # Where its full dependency list pulls in UIs and datasets: the harness itself without dependencies,
    # then what it imports; else the pinned packages with their dependencies.
    wanted = [["--no-deps", first], [*rest, *h.deps]] if h.deps else [packages]
    if h.sdists:
        _pip(name, [*pip, "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels), *h.sdists], timeout)
        if [w for w in wheels.glob("*.whl") if not w.name.endswith("-py3-none-any.whl")]:
            raise ImageError(f"{name}: a source-only dependency is not pure Python; it cannot be built offline")
    for w in wanted:
        _pip(
            name,
            [
                *pip,
                "download",
                "--quiet",
                "--dest",
                str(wheels),
                *target,
                *download_flags(name, h.ceiling, wheels.parent),
                *w,
            ],
            timeout,
        )
    if problem := unmet(name, h.ceiling, pip, target, wheels, timeout):
        raise ImageError(problem)
    _pip(
        name,
        [
            *pip,
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--ignore-requires-python",
            "--target",
            str(stage),
            *target,
            *map(str, sorted(wheels.glob("*.whl"))),
        ],
        timeout,
    )


def _pip(name: str, args: list[str], timeout: float) -> None:
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise ImageError(f"pip could not fetch {name}: {(done.stderr.strip().splitlines() or ['?'])[-1]}")


def _commands(stage: Path, links: tuple[tuple[str, str], ...]) -> None:
    """Make stage/bin runnable in the image: pip wrote console scripts for this host's interpreter."""
    bin_dir = stage / "bin"
    bin_dir.mkdir(exist_ok=True)
    for script in bin_dir.iterdir():
        if script.is_file() and not script.is_symlink():
            head, _, body = script.read_bytes().partition(b"\n")
            if head.startswith(b"#!") and b"python" in head:
                script.write_bytes(b"#!/usr/bin/python3\n" + body)
    for command, target in links:
        if not (stage / target).is_file():
            raise ImageError(f"the harness package has no {target} (its layout changed?)")
        link = bin_dir / command
        link.unlink(missing_ok=True)
        link.symlink_to(os.path.relpath(stage / target, bin_dir))
