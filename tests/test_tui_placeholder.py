"""The `stamina-tui` command exists and says plainly that the monitor is not built yet."""

from __future__ import annotations

import subprocess
import sys


def test_stamina_tui_says_not_built_yet() -> None:
    """Until the TUI lands, `stamina-tui` exits 2 with one line pointing at `staminad status` and `logs`."""
    done = subprocess.run([sys.executable, "-m", "tui"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "not built yet" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
