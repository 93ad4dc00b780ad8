"""Where a scenario of a multi-engine sweep was placed, and whether its last snapshot may move it: files on the
daemon's disk next to its sandbox, so both survive a daemon restart (kill -9 included)."""

from __future__ import annotations

import json
from pathlib import Path

PLACEMENT = "engine.json"  # in the sandbox directory: the engine the scenario was last placed on
SNAPSHOT = Path("snapshots") / "workspace.tar.gz"  # the volume runtime's last workspace snapshot
CURRENT = "snapshot.json"  # in the sandbox directory: whether that snapshot is of the last tested attempt


def read_placement(root: Path) -> str:
    try:
        return str(json.loads((root / PLACEMENT).read_text())["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def write_placement(root: Path, url: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{PLACEMENT}.new"
    tmp.write_text(json.dumps({"url": url}))
    tmp.replace(root / PLACEMENT)


def current(root: Path) -> bool:
    """Whether the last snapshot is of the scenario's last tested attempt, or no attempt was tested yet.

    Unset when a test starts, set when the snapshot after it is taken whole: a loss between the two (or a
    snapshot skipped as too large, or failed) leaves the newest workspace on its engine alone.
    """
    try:
        return bool(json.loads((root / CURRENT).read_text())["current"])
    except FileNotFoundError:
        return True
    except (OSError, ValueError, KeyError, TypeError):
        return False


def set_current(root: Path, current: bool) -> None:
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{CURRENT}.new"
    tmp.write_text(json.dumps({"current": current}))
    tmp.replace(root / CURRENT)


__all__ = ["CURRENT", "PLACEMENT", "SNAPSHOT", "current", "read_placement", "set_current", "write_placement"]
