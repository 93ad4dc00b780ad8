"""How the ops report's figures read: bytes in binary units and spans of time, the same in the viewer and the TUI."""

from __future__ import annotations


def human_bytes(n: float) -> str:
    """`n` bytes as B, KiB, MiB, GiB or TiB (one decimal past bytes)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def span(seconds: float) -> str:
    """A duration as 42s, 3m05s or 2h07m; "-" for a negative one (not known)."""
    if seconds < 0:
        return "-"
    s = int(seconds)
    return f"{s}s" if s < 60 else f"{s // 60}m{s % 60:02d}s" if s < 3600 else f"{s // 3600}h{s % 3600 // 60:02d}m"


__all__ = ["human_bytes", "span"]
