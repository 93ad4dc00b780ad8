"""A harness layer's wheel set where its pin alone is not enough: the release's lock, and a Python ceiling.

OpenHands' CLI (every release from 1.3.0 on, 1.12.1 the paper's among them) declares `Requires-Python:
==3.12.*`, yet everything it imports (openhands-sdk, -tools, -workspace) asks only `>=3.12`. Neither base
ships a 3.12 (bookworm has 3.11, trixie 3.13), and no CPython 3.12 can be had offline here: Debian dropped
it before trixie (sid and forky carry 3.13 and newer) and standalone builds download from outside the
package registries. So such a harness goes on trixie's 3.13 with its own wheel's ceiling ignored, and that
ceiling alone: every other wheel of its layer must accept the base's Python, which pip itself checks.

Its dependencies have only lower bounds, and today's releases of them conflict (pip backtracks through
browser-use, litellm and OpenTelemetry for over ten minutes): the layer installs the versions the release's
own lock file names (`locks/NAME.json`), given to pip as constraints, so it runs what its authors shipped.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import zipfile
from pathlib import Path

LOCKS = Path(__file__).with_name("locks")
# A harness's ceiling, as its layer names it (`image.LayerSpec.ceiling`): (its distribution's wheel-file prefix,
# the Requires-Python it declares, ignored for it alone); None when it has none.
Ceiling = tuple[str, str] | None


def _lock(name: str) -> Path | None:
    path = LOCKS / f"{name}.json"
    return path if path.is_file() else None


def fingerprint(name: str, ceiling: Ceiling) -> str:
    """What of this module changes a harness's layer (its lock, its ceiling), for the layer's tag."""
    lock = _lock(name)
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()[:12] if lock else ""
    return f"{digest}|{ceiling or ''}" if lock or ceiling else ""


def download_flags(name: str, ceiling: Ceiling, workdir: Path) -> list[str]:
    """The extra `pip download` flags for this harness: its lock as constraints, its ceiling ignored."""
    flags = ["--ignore-requires-python"] if ceiling else []
    lock = _lock(name)
    if lock is not None:
        constraints = workdir / f"{name}-constraints.txt"
        constraints.write_text("\n".join(json.loads(lock.read_text())["pins"]) + "\n")
        flags += ["--constraint", str(constraints)]
    return flags


def unmet(name: str, known: Ceiling, pip: list[str], target: list[str], wheels: Path, timeout: float) -> str:
    """'' when every wheel but the harness's own accepts the target Python (and its own declares the known
    ceiling); else one line saying which does not."""
    if not known:
        return ""
    prefix, ceiling = known
    own = sorted(w for w in wheels.glob("*.whl") if w.name.startswith(prefix))
    if len(own) != 1:
        return f"{name}: expected one {prefix}*.whl among the downloaded wheels, found {len(own)}"
    declared = _requires_python(own[0])
    if declared != ceiling:
        return f"{name}: {own[0].name} declares Requires-Python {declared!r}, not {ceiling!r}: check it anew"
    rest = sorted(str(w) for w in wheels.glob("*.whl") if w != own[0])
    checked = wheels.parent / f"{name}-checked"
    check = subprocess.run(
        [*pip, "download", "--quiet", "--no-deps", "--no-index", "--dest", str(checked), *target, *rest],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check.returncode != 0:
        last = (check.stderr.strip().splitlines() or ["?"])[-1]
        return f"{name}: a dependency does not run on the base's Python: {last}"
    return ""


def _requires_python(wheel: Path) -> str:
    """The Requires-Python line of a wheel's METADATA ('' when it has none)."""
    with zipfile.ZipFile(wheel) as z:
        meta = next((n for n in z.namelist() if n.endswith(".dist-info/METADATA")), None)
        text = z.read(meta).decode(errors="replace") if meta else ""
    for line in text.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line
        if line.startswith("Requires-Python:"):
            return line.partition(":")[2].strip()
    return ""
