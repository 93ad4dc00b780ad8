"""How the ops report's figures read: bytes in binary units, spans of time and dollars, the same in every view.

Dollars are never shown as exact when they are not: `dollars` marks a sum with estimated calls (`~`, tokens
counted from bytes because the provider reported none, or a call abandoned before its usage came) and says
`unpriced` for calls of a model without a price, whose cost is unknown rather than $0.
"""

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


def dollars(cost: float, calls: int = 0, estimated: int = 0, unpriced: int = 0, digits: int = 2) -> str:
    """A sum of model calls' cost: `$1.23`; `~$1.23 est.` when some calls were estimated; `unpriced` when every
    call had no price, `$1.23 + N unpriced` when some had none."""
    if calls and unpriced >= calls:
        return "unpriced"
    text = f"{'~' if estimated else ''}${cost:.{digits}f}{' est.' if estimated else ''}"
    return f"{text} + {unpriced} unpriced" if unpriced else text


__all__ = ["dollars", "human_bytes", "span"]
