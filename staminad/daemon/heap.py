"""The daemon's heap as Python's cycle collector sees it.

A full collection walks every tracked object while holding the GIL, so the event loop stops for as long as it
takes; on a loaded box, with the daemon's thread preempted in the middle, that was up to a second at 500
scenarios, and every completion marker noticed in that second was late by it. The daemon keeps what it walks
small: a running scenario holds its turns as bytes (`engine.turns`), and what exists once the daemon has
started (modules, classes, functions, the parsed settings: tens of thousands of objects that live as long as
the process) is frozen out of every collection (`gc.freeze`). Frozen objects are still freed by reference
counting; only garbage cycles among them would stay, and they are the process's own import-time objects.
"""

from __future__ import annotations

import gc


def settle() -> int:
    """Collect what start-up left, then move every surviving object out of later collections; how many moved."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


__all__ = ["settle"]
