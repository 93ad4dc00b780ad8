"""The real coding-agent harnesses staminabench runs: one module of this package per harness, found by name.

Each public module here holds one `HARNESS` record (`_kit.Harness`): its launch recipe (command lines for the
first call of a session and for continuing it, environment, config files, output parser, history to put back,
context-window settings), its image layer's contents (`Layer`) and its transcript reader. Adding a harness is
adding one module named after it (`-` as `_`); nothing else lists harnesses. Standard library only, and only
relative imports inside the package: the launcher (`scripts/harness.py`) imports it inside the sandbox as the
top-level package `harnesses`.
"""

from __future__ import annotations

import importlib
import pkgutil

from ._kit import HARNESS_ROOT, Files, Harness, Layer, Report, TranscriptReader, Turn


def _collect() -> dict[str, Harness]:
    """Each public module's `HARNESS`, by name, in the modules' order; a module whose record is missing or
    misnamed is an error at import, not a harness quietly left out."""
    found: dict[str, Harness] = {}
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
        record = getattr(importlib.import_module(f".{module}", __name__), "HARNESS", None)
        if not isinstance(record, Harness) or record.name.replace("-", "_") != module:
            raise ImportError(f"harnesses/{module}.py must define HARNESS, a Harness named after the module")
        found[record.name] = record
    return found


HARNESSES = _collect()

__all__ = ["HARNESSES", "HARNESS_ROOT", "Files", "Harness", "Layer", "Report", "TranscriptReader", "Turn"]
