"""The agent's code change between attempts: a unified diff of two kept workspaces (see `sandbox.codekeep`).

An attempt is compared with the attempt kept last before it in the scenario's order (turn, attempt, infra try):
the attempt before it in the same turn, or, for a turn's first attempt, the last attempt of the turn before. The
first kept attempt is compared with the workspace as the benchmark seeded it: its README and specification
(`SEEDED`) are listed as seeded, never counted as lines the agent wrote. The diff is bounded: at most MAX_DIFFED
files get their lines compared, a file's diff stops after MAX_FILE_LINES lines, the whole after `limit`
characters, and the files of the least crowded directories go first (`_first`), so a directory of generated files
does not push the code out; `cut` says what was left out. The answer is the protocol's `CodeChange`, so the TUI
(through the daemon) and the viewer show the same thing. UI-free.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from protocol.messages import CodeChange, FileChange
from staminad.sandbox.codekeep import MAX_FILE_BYTES, KeptCode, KeptFile, job_id, read_listing, read_text

# What the benchmark writes into a workspace before turn 0 (`engine.scenario`): not the agent's lines.
SEEDED = ("README.md", "initial_specification.md")
DIFF_CHARS = 200_000  # characters of unified diff in one answer (a control-socket frame holds 4 MiB)
MAX_DIFFED = 300  # changed files whose lines are compared
MAX_FILE_LINES = 4000  # lines of one file's diff shown


class AttemptRef(NamedTuple):
    """What the comparison needs of an attempt row: its id, place, phase and outcome."""

    id: int
    turn: int
    attempt: int
    infra_try: int
    phase: str
    outcome: str | None


def label(a: AttemptRef) -> str:
    """An attempt in words: "turn 2, attempt 1" (with its infra try when not the first)."""
    return f"turn {a.turn}, attempt {a.attempt}" + (f", infra try {a.infra_try}" if a.infra_try else "")


def _missing(a: AttemptRef, listing: KeptCode | None) -> str:
    """Why attempt `a` has no code to compare ("" when it has)."""
    if listing is not None and listing.skipped:
        return f"no code was kept for {label(a)}: {listing.skipped}"
    if listing is not None:
        return ""
    if a.phase != "tested":
        return f"{label(a)} is not tested yet: its code is kept once it is"
    if a.outcome == "infra":
        return f"no code was kept for {label(a)}: it ended as an infrastructure failure before its code was kept"
    return f"no code was kept for {label(a)} (its sandbox directory is gone, or it ran before code was kept)"


def code_change(
    root: Path | None,
    attempts: Sequence[AttemptRef],
    attempt_id: int,
    limit: int = DIFF_CHARS,
    listings: dict[str, KeptCode | None] | None = None,
) -> CodeChange:
    """Attempt `attempt_id`'s workspace against the one kept before it; `attempts` are the scenario's, in order.
    `listings` caches the listings read, for a caller comparing every attempt of a scenario (the viewer's page)."""
    cache: dict[str, KeptCode | None] = {} if listings is None else listings

    def listing(a: AttemptRef) -> KeptCode | None:
        job = job_id(a.turn, a.attempt, a.infra_try)
        if job not in cache:
            cache[job] = read_listing(root, job) if root is not None else None
        return cache[job]

    index = next((i for i, a in enumerate(attempts) if a.id == attempt_id), None)
    if index is None:
        return CodeChange(id=attempt_id, missing=f"no attempt {attempt_id} in this scenario")
    target = attempts[index]
    if root is None:
        return CodeChange(id=attempt_id, missing="this scenario has no sandbox directory on this host")
    new = listing(target)
    if why := _missing(target, new):
        return CodeChange(id=attempt_id, missing=why)
    assert new is not None
    old, base = KeptCode(taken_at=0.0), None
    for a in reversed(attempts[:index]):
        found = listing(a)
        if found is not None and not found.skipped:
            old, base = found, a
            break
    return _compare(
        root,
        old,
        new,
        attempt_id,
        label(base) if base else "the workspace as seeded (the first code kept)",
        base.id if base else 0,
        limit,
        seeded=() if base else SEEDED,
    )


class _Text:
    """Kept text contents read once each (an unchanged file is never read)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def lines(self, f: KeptFile | None) -> list[str] | None:
        """The file's lines, [] for none, or None when its content cannot be compared."""
        if f is None:
            return []
        if f.kind != "text" or not f.kept:
            return None
        text = read_text(self.root, f.sha)
        return None if text is None else text.splitlines(keepends=True)


def _why_not(f: KeptFile | None) -> str:
    if f is None:
        return ""
    if f.kind == "binary":
        return f"binary, {f.size:,} bytes"
    if f.kind == "large":
        return f"{f.size:,} bytes, over {MAX_FILE_BYTES >> 10} KiB: not compared"
    if f.kind == "link":
        return "a symbolic link (not followed)"
    if f.kind == "other":
        return "not a regular file"
    return "its content was not kept"


def _note(a: KeptFile | None, b: KeptFile | None) -> str:
    """Why a file's lines are not compared, with its sizes before and after where it was there both times."""
    if a is None or b is None:
        return _why_not(a or b)
    if a.kind == b.kind == "binary":
        return f"binary, {a.size:,} -> {b.size:,} bytes"
    if a.kind == b.kind == "large":
        return f"{a.size:,} -> {b.size:,} bytes, over {MAX_FILE_BYTES >> 10} KiB: not compared"
    if a.kind == b.kind:
        return _why_not(b)
    return f"was {_why_not(a) if a.kind != 'text' else 'text'}, now {_why_not(b) if b.kind != 'text' else 'text'}"


def _unchanged(a: KeptFile | None, b: KeptFile | None) -> bool:
    return a is not None and b is not None and _same(a, b)


def _same(a: KeptFile, b: KeptFile) -> bool:
    if a.kind != b.kind:
        return False
    if a.kind in ("text", "binary"):
        return a.sha == b.sha
    return a.size == b.size  # a large file, a link, a FIFO: what was listed of it


def _first(paths: list[str]) -> list[str]:
    """`paths` in the order their lines are compared within the bounds: those in directories with fewer changed
    files first, shallower first, so that the agent's code is shown when a directory of thousands of generated
    files changed beside it (each of those is still listed, by path, with why it is not shown)."""
    crowd = Counter(path.rpartition("/")[0] for path in paths)
    return sorted(paths, key=lambda path: (crowd[path.rpartition("/")[0]], path.count("/"), path))


def _compare(
    root: Path,
    old: KeptCode,
    new: KeptCode,
    attempt_id: int,
    base: str,
    base_id: int,
    limit: int,
    seeded: tuple[str, ...] = (),
) -> CodeChange:
    texts = _Text(root)
    changes: dict[str, FileChange] = {}
    shown: dict[str, str] = {}
    size = 0
    cut: list[str] = []
    if old.cut:
        cut.append(f"the listing of {base} was cut: {old.cut}")
    if new.cut:
        cut.append(f"this attempt's listing was cut: {new.cut}")
    unshown = undiffed = diffed = 0
    changed = [p for p in set(old.files) | set(new.files) if not _unchanged(old.files.get(p), new.files.get(p))]
    for path in _first(changed):
        a, b = old.files.get(path), new.files.get(path)
        status = "added" if a is None else "removed" if b is None else "changed"
        if a is None and path in seeded:  # its text at turn 0 is the benchmark's, whatever the agent added to it
            changes[path] = FileChange(path=path, status="seeded", note="written by the benchmark: not counted")
            continue
        if diffed >= MAX_DIFFED:
            changes[path] = FileChange(path=path, status=status, note="not compared: too many files changed")
            undiffed += 1
            continue
        diffed += 1
        before, after = texts.lines(a), texts.lines(b)
        if before is None or after is None:
            changes[path] = FileChange(path=path, status=status, note=_note(a, b))
            continue
        lines = list(
            difflib.unified_diff(
                before, after, "/dev/null" if a is None else f"a/{path}", "/dev/null" if b is None else f"b/{path}"
            )
        )
        added = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++"))
        removed = sum(1 for x in lines if x.startswith("-") and not x.startswith("---"))
        changes[path] = FileChange(path=path, status=status, added=added, removed=removed)
        if len(lines) > MAX_FILE_LINES:
            lines = [*lines[:MAX_FILE_LINES], f"... ({len(lines) - MAX_FILE_LINES} more lines of {path}'s diff)\n"]
        text = "".join(x if x.endswith("\n") else x + "\n\\ No newline at end of file\n" for x in lines)
        if size + len(text) > limit:
            unshown += 1
            continue
        shown[path] = text
        size += len(text)
    files = [changes[path] for path in sorted(changes)]
    out = [shown[path] for path in sorted(shown)]
    if undiffed:
        cut.append(f"{undiffed} more changed files are listed without their lines (over {MAX_DIFFED})")
    if unshown:
        cut.append(f"the diff of {unshown} files is left out (the diff is cut at {limit:,} characters)")
    return CodeChange(
        id=attempt_id,
        base=base,
        base_id=base_id,
        files=tuple(files),
        added=sum(f.added for f in files),
        removed=sum(f.removed for f in files),
        diff="".join(out),
        cut=tuple(cut),
    )
