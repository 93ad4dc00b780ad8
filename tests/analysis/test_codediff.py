"""The code change between attempts: which attempt an attempt is compared with, the diff, its bounds and notes."""

from __future__ import annotations

from pathlib import Path

from staminad.analysis.codediff import AttemptRef, code_change
from staminad.sandbox.codekeep import MAX_FILE_BYTES, keep_from_dir, keep_nothing


class Scenario:
    """A sandbox directory whose workspace is kept after each attempt, as the engine does."""

    def __init__(self, root: Path) -> None:
        self.root, self.ws = root, root / "workspace"
        self.ws.mkdir(parents=True)
        self.refs: list[AttemptRef] = []

    def attempt(self, turn: int, attempt: int, outcome: str = "fail", infra_try: int = 0, kept: bool = True) -> int:
        """Record an attempt; its code is kept unless it ended as infra (never tested) or `kept` is False."""
        ref = AttemptRef(len(self.refs) + 1, turn, attempt, infra_try, "tested", outcome)
        self.refs.append(ref)
        if kept and outcome != "infra":
            keep_from_dir(self.ws, self.root, f"t{turn:04d}-a{attempt:02d}-i{infra_try:02d}")
        return ref.id

    def write(self, name: str, text: str | bytes) -> None:
        path = self.ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode() if isinstance(text, str) else text)


def test_consecutive_attempts_and_turns_are_compared(tmp_path: Path) -> None:
    """Each attempt is compared with the one before it (retry, previous turn, or the seeded workspace), not infra."""
    s = Scenario(tmp_path)
    s.write("README.md", "# Instructions\n\n- [json] ...\n")  # what the engine seeds before turn 0
    s.write("initial_specification.md", "# Specification\n")
    s.write("app.py", "def f():\n    return 1\n")
    s.write("old.py", "gone = True\n")
    first = s.attempt(0, 1)
    s.write("app.py", "def f():\n    return 2\n")
    (s.ws / "old.py").unlink()
    s.write("img.png", b"\x89PNG\0")
    second = s.attempt(0, 2, "pass")
    infra = s.attempt(1, 1, "infra")
    s.write("app.py", "def f():\n    return 3\n")
    turn1 = s.attempt(1, 1, "pass", infra_try=1)

    c = code_change(tmp_path, s.refs, first)
    assert c.base == "the workspace as seeded (the first code kept)" and c.base_id == 0
    assert [(f.path, f.status, f.added) for f in c.files] == [
        ("README.md", "seeded", 0),
        ("app.py", "added", 2),
        ("initial_specification.md", "seeded", 0),
        ("old.py", "added", 1),
    ]
    assert "README" not in c.diff and "Specification" not in c.diff
    assert c.summary == "2 files changed, +3 -0 lines, against the workspace as seeded (the first code kept)"

    c = code_change(tmp_path, s.refs, second)
    assert c.base == "turn 0, attempt 1" and c.base_id == first
    assert {f.path: (f.status, f.added, f.removed, f.note) for f in c.files} == {
        "app.py": ("changed", 1, 1, ""),
        "img.png": ("added", 0, 0, "binary, 5 bytes"),
        "old.py": ("removed", 0, 1, ""),
    }
    assert "-    return 1\n+    return 2\n" in c.diff and "--- a/old.py\n+++ /dev/null" in c.diff
    assert (c.added, c.removed) == (1, 2) and c.summary == "3 files changed, +1 -2 lines, against turn 0, attempt 1"

    assert "infrastructure failure" in code_change(tmp_path, s.refs, infra).missing
    c = code_change(tmp_path, s.refs, turn1)
    assert c.base == "turn 0, attempt 2" and c.base_id == second and c.added == c.removed == 1


def test_what_cannot_be_compared_is_said(tmp_path: Path) -> None:
    """An untested attempt, one whose snapshot was skipped, a huge file and an unchanged workspace each say so."""
    s = Scenario(tmp_path)
    s.write("big.txt", "x" * (MAX_FILE_BYTES + 10))
    s.attempt(0, 1)
    s.write("big.txt", "y" * (MAX_FILE_BYTES + 20))
    same = s.attempt(0, 2)
    c = code_change(tmp_path, s.refs, same)
    assert [(f.path, f.note) for f in c.files] == [("big.txt", "262,154 -> 262,164 bytes, over 256 KiB: not compared")]
    assert c.diff == ""
    unchanged = s.attempt(1, 1)
    assert code_change(tmp_path, s.refs, unchanged).summary.startswith("no file changed, +0 -0 lines")
    skipped = s.attempt(1, 2, kept=False)
    keep_nothing(tmp_path, "t0001-a02-i00", "the workspace archive is over 256 MiB")
    assert code_change(tmp_path, s.refs, skipped).missing.endswith("the workspace archive is over 256 MiB")
    s.refs.append(AttemptRef(99, 2, 1, 0, "launched", None))
    assert "not tested yet" in code_change(tmp_path, s.refs, 99).missing
    assert "no sandbox directory" in code_change(None, s.refs, unchanged).missing


def test_a_long_diff_is_cut_and_says_where(tmp_path: Path) -> None:
    """Past the character limit whole files' diffs are left out, counted in `cut`; the file list stays whole."""
    s = Scenario(tmp_path)
    s.attempt(0, 1)
    for i in range(10):
        s.write(f"m{i}.py", "".join(f"line {n}\n" for n in range(200)))
    many = s.attempt(0, 2)
    c = code_change(tmp_path, s.refs, many, limit=5000)
    assert len(c.files) == 10 and c.added == 2000 and len(c.diff) <= 5000
    assert c.diff.startswith("--- /dev/null\n+++ b/m0.py") and "+++ b/m9.py" not in c.diff
    assert any(note.startswith("the diff of ") and "5,000 characters" in note for note in c.cut)
