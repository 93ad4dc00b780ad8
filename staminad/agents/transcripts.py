"""The agent's transcript: a short list of turns read from the session file a real harness leaves in HOME.

Each harness's record says where its session or trajectory file lives and how its turns are read
(`Harness.transcript`, a `TranscriptReader`: HOME-relative glob patterns, HOME being `<workspace>/.home`, and
the harness's own parser in its module of `staminad.agents.harnesses`). This module owns the bounds, whatever
the agent made of the file: only the newest matching regular file, found and read without following links,
only its last READ_LIMIT bytes (a reader that gathers several files, such as Mistral Vibe's session store or
OpenHands' event files, gets the same byte budget and the same bounded access through `Files`), only the last
MAX_ITEMS items, each cut to TEXT_LIMIT characters. Parsing is lenient: a torn last line, a record of a kind
not known or one of an unexpected shape is skipped, never an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import msgspec

from protocol.messages import TranscriptItem
from staminad.agents.harnesses import HARNESSES, Turn
from staminad.sandbox.bounded import bounded_tail
from staminad.sandbox.inside.beneath import WalkBudget, glob

READ_LIMIT = 256 * 1024  # bytes read from the end of a session file
MAX_ITEMS = 40  # items kept, the latest
TEXT_LIMIT = 2000  # characters kept of an item's text


class Transcript(msgspec.Struct, frozen=True, kw_only=True):
    path: str  # the file read
    items: tuple[TranscriptItem, ...]
    cut: bool  # True when the file was larger than what was read


GLOB_ENTRIES = 20_000  # directory entries looked at per pattern (an agent can make HOME as large as it likes)
GLOB_SECONDS = 5.0


def newest(home: Path, patterns: Iterable[str]) -> Path | None:
    """The most recently written regular file matching any pattern under `home`, found without following a link at
    any component, `home` itself included (it is `<workspace>/.home`: the agent's; the workspace is the root)."""
    best: tuple[float, Path] | None = None
    for pattern in patterns:
        budget = WalkBudget(GLOB_ENTRIES, GLOB_SECONDS)
        try:
            found = glob(home.parent, f"{home.name}/{pattern}", budget)
        except OSError:
            continue
        for rel, st in found:
            if best is None or st.st_mtime > best[0]:
                best = (st.st_mtime, home.parent / rel)
    return None if best is None else best[1]


def read_transcript(home: Path, harness: str) -> Transcript | None:
    """The transcript the harness left under `home`, or None (no such harness, no reader for it, or no file)."""
    h = HARNESSES.get(harness)
    reader = h.transcript if h is not None else None
    if reader is None:
        return None
    path = newest(home, reader.patterns)
    if path is None:
        return None
    files = _Beneath(home.parent)
    read = files.tail(path, READ_LIMIT) if reader.read is None else reader.read(files, path, READ_LIMIT)
    if read is None:
        return None
    text, cut = read
    items = [_bounded(t) for t in reader.parse(text, cut) if t.text or t.tools]
    return Transcript(path=str(path), items=tuple(items[-MAX_ITEMS:]), cut=cut)


class _Beneath:
    """The readers' access to the agent's files: regular files below `root` (the workspace), bounded, reached
    without following a link at any component."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def tail(self, path: Path, limit: int) -> tuple[str, bool] | None:
        tail = bounded_tail(path, limit, beneath=self.root)
        return None if tail is None else (tail.text, tail.cut)

    def glob(self, pattern: str, entries: int) -> list[str]:
        return [rel for rel, _ in glob(self.root, pattern, WalkBudget(entries, GLOB_SECONDS))]


def _bounded(turn: Turn) -> TranscriptItem:
    text = turn.text if len(turn.text) <= TEXT_LIMIT else turn.text[:TEXT_LIMIT] + " …"
    return TranscriptItem(role=turn.role, text=text, tools=turn.tools[:20])


__all__ = ["MAX_ITEMS", "READ_LIMIT", "TEXT_LIMIT", "Transcript", "newest", "read_transcript"]
