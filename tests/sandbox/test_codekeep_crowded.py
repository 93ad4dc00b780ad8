"""A directory of 100,000 files beside the agent's code: the code is still kept and shown, with the cut said."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from staminad.analysis.codediff import AttemptRef, code_change
from staminad.sandbox.codekeep import DIR_ENTRIES, MAX_FILES, keep_from_archive, keep_from_dir, read_text
from staminad.viewer.model import code_view

CODE = {"app.py": "def f():\n    return 1\n", "run_server.sh": "python3 app.py\n", "src/models.py": "x = 1\n"}


def _crowd(directory: Path, count: int) -> None:
    directory.mkdir(parents=True)
    for i in range(count):
        fd = os.open(directory / f"f{i:06d}.txt", os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"%d\n" % i)
        os.close(fd)


def _workspace(root: Path, count: int) -> Path:
    """A workspace of the agent's code and, beside it, `data/` of `count` small files."""
    ws = root / "workspace"
    for rel, text in CODE.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    _crowd(ws / "data", count)
    return ws


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The issue's case: 100,000 files in one directory (some 15 s of CPU to make on this machine's disk)."""
    return _workspace(tmp_path_factory.mktemp("crowded"), 100_000)


@pytest.mark.slow
def test_a_directory_of_100k_files_costs_its_own_entries_not_the_code(crowded: Path, tmp_path: Path) -> None:
    """Every file of the code is listed and kept; `data/` is looked at up to DIR_ENTRIES, and the cut says so."""
    _code_kept_beside_the_crowd(crowded, tmp_path)


def test_a_directory_over_its_entry_bound_costs_its_own_entries_not_the_code(tmp_path: Path) -> None:
    """The same at three times DIR_ENTRIES: every file of the code is kept, `data/` cut at DIR_ENTRIES."""
    _code_kept_beside_the_crowd(_workspace(tmp_path, 3 * DIR_ENTRIES), tmp_path / "box")


def _code_kept_beside_the_crowd(crowded: Path, tmp_path: Path) -> None:
    listing = keep_from_dir(crowded, tmp_path, "t0000-a01-i00")
    for rel, text in CODE.items():
        kept = listing.files[rel]
        assert kept.kind == "text" and kept.kept and read_text(tmp_path, kept.sha) == text
    assert sum(p.startswith("data/") for p in listing.files) == DIR_ENTRIES < MAX_FILES
    assert f"data/: only {DIR_ENTRIES} of its entries are looked at" in listing.cut
    assert "the walk stopped" not in listing.cut  # the walk's own bound was never reached


@pytest.mark.slow
def test_the_code_change_shows_the_code_and_the_cut(crowded: Path, tmp_path: Path) -> None:
    """The viewer's code change of that attempt shows the code's diff first in line, and the cut beside it."""
    keep_from_dir(crowded, tmp_path, "t0000-a01-i00")
    (crowded / "app.py").write_text("def f():\n    return 2\n")
    try:
        keep_from_dir(crowded, tmp_path, "t0000-a02-i00")
    finally:
        (crowded / "app.py").write_text(CODE["app.py"])
    refs = [AttemptRef(1, 0, 1, 0, "tested", "fail"), AttemptRef(2, 0, 2, 0, "tested", "pass")]
    first = code_view(code_change(tmp_path, refs, 1))["change"]
    assert "+++ b/app.py" in first.diff and "+++ b/src/models.py" in first.diff  # not pushed out by data/'s files
    assert any(f"data/: only {DIR_ENTRIES} of its entries" in c for c in first.cut)
    second = code_view(code_change(tmp_path, refs, 2))
    assert ("add", "+    return 2") in second["lines"] and ("del", "-    return 1") in second["lines"]
    assert [f.path for f in second["change"].files] == ["app.py"]  # the same entries of data/ looked at each time


def test_a_snapshot_with_a_crowded_directory_keeps_the_code_after_it(tmp_path: Path) -> None:
    """In a snapshot whose crowded directory comes first, the members after it (the code) are still kept."""
    archive = tmp_path / "snapshot.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for i in range(DIR_ENTRIES * 3):
            data = b"%d\n" % i
            info = tarfile.TarInfo(f"./data/f{i:06d}.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for rel, text in CODE.items():
            info = tarfile.TarInfo(f"./{rel}")
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    listing = keep_from_archive(archive, tmp_path / "kept", "t0000-a01-i00")
    assert all(listing.files[rel].kept for rel in CODE)
    assert sum(p.startswith("data/") for p in listing.files) == DIR_ENTRIES
    assert f"data/: only {DIR_ENTRIES} of its entries are looked at" in listing.cut
