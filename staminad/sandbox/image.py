"""Building the sandbox image without a registry: a Debian root file system from Debian's packages.

`mmdebstrap` writes a minimal Debian tree as a tar stream, which `docker import` turns into an
image. The tag is content-addressed (a hash of the recipe), so building twice is a no-op and a
changed recipe gets a new tag; `latest` points at the newest build. Agent harness layers, and the
Node.js and Rust toolchains for the language ablation, go on top with the same mechanism.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess

import msgspec

BASE_PACKAGES = ("python3", "bash", "procps", "ca-certificates", "coreutils", "util-linux")
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

    def tag(self) -> str:
        digest = hashlib.sha256(msgspec.json.encode(self)).hexdigest()[:12]
        return f"{REPO}:{digest}"


def recipe(layer: str = "base", suite: str = "bookworm") -> Recipe:
    if layer not in LAYERS:
        raise ImageError(f"unknown layer {layer!r}; choose from {', '.join(LAYERS)}")
    return Recipe(suite=suite, variant="minbase", packages=tuple(sorted({*BASE_PACKAGES, *LAYERS[layer]})))


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
        cmd = ["mmdebstrap", f"--variant={r.variant}", f"--include={','.join(r.packages)}", suite, "-"]
        if mirror:
            cmd.append(mirror)
        debootstrap = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert debootstrap.stdout is not None
        imported = subprocess.run(["docker", "import", "--change", "CMD [\"sh\"]", "-", tag],
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
