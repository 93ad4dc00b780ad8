"""`stamina-tui` entry point. The monitor is not built yet; until then, use `staminad status` and `staminad logs`."""

from __future__ import annotations

import sys


def main() -> int:
    print("stamina-tui: not built yet; use `staminad status` and `staminad logs` meanwhile", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
