"""Each model's context window, and the share of it at which to compact, in every harness's own settings.

Standard library only: the launcher (`scripts/harness.py`) imports this beside `harnesses/` inside the
sandbox. An open model's name is unknown to the harness binaries, so without these they run on a fallback
window (Claude Code's 200k, Codex's fallback metadata) and compact too late (the request is refused over the
window) or never. `tune` takes a harness's environment and config files as its record writes them and
adds the window through the record's `window` where the harness has such a setting; a window
of 0 (the sweep gives none) changes nothing.

Which settings each harness has is its module's `_window` (in `harnesses/`); OpenHands has none yet (its
settings come with its headless adapter).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the launcher imports this without the package above it
    from staminad.agents.harnesses import Harness

DEFAULT_COMPACT_AT = 0.8  # a share of the window; the sweep's model may set its own (`compact_at`)


def tune(
    harness: Harness, model: str, env: dict[str, str], files: dict[str, str], tokens: int, at: float
) -> tuple[dict[str, str], dict[str, str]]:
    """The harness's environment and HOME-relative files with the model's window (`tokens`) and threshold (`at`),
    set by the harness's own `window` (its module in `harnesses/`); the arguments are left as they were."""
    env, files = dict(env), dict(files)
    if tokens > 0 and harness.window is not None:
        harness.window(model, tokens, max(1, int(tokens * at)), at, env, files)
    return env, files
