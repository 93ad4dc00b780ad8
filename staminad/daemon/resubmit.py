"""A sweep submitted again under a stored name: resumed if unchanged, refused with what changed, or replaced.

A sweep's rows were made from its configuration (its fingerprint), so a changed file under the same
name cannot resume them. The refusal is one line naming the file, the first differences against the
stored sweep, and the two ways out: a new `name`, or `--force-new`, which deletes the stored sweep's
rows and sandboxes and starts it afresh.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import msgspec

from staminad.engine.config import SweepError, SweepFile
from state import sweeps
from state.store import Store

SHOWN = 3  # differences named in the message


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flat(item, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


def differences(stored: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """`key: old -> new` for every setting that differs, in a stable order."""
    old_flat, new_flat = _flat(stored), _flat(new)
    keys = sorted(set(old_flat) | set(new_flat))
    return [f"{k}: {old_flat.get(k)!r} -> {new_flat.get(k)!r}" for k in keys if old_flat.get(k) != new_flat.get(k)]


async def check(store: Store, sweep: SweepFile, fp: str, source: Path, force_new: bool, state_dir: Path) -> bool:
    """Raise SweepError if `sweep` changed against the stored one (unless force_new: then delete that one).

    Returns True when a stored sweep was replaced.
    """
    stored = await sweeps.find_sweep(store, sweep.name)
    if stored is None or stored.fingerprint == fp:
        return False
    if not force_new:
        changed = differences(msgspec.json.decode(stored.config), msgspec.to_builtins(sweep))
        shown = "; ".join(changed[:SHOWN]) + (f"; and {len(changed) - SHOWN} more" if len(changed) > SHOWN else "")
        raise SweepError(
            f"{source}: sweep {sweep.name!r} is already stored with a different configuration "
            f"({shown or 'a changed fingerprint'}); give the file a new `name`, or pass --force-new "
            "to delete the stored sweep and start it afresh"
        )
    await sweeps.delete_sweep(store, sweep.name)
    sandboxes = state_dir / "sandboxes" / sweep.name
    await anyio.to_thread.run_sync(lambda: shutil.rmtree(sandboxes, ignore_errors=True))
    return True


__all__ = ["check", "differences"]
