"""Keeping an attempt's code from a workspace the agent wrote: bounded, content-addressed, no link ever followed."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from pathlib import Path

import pytest

from staminad.sandbox import codekeep
from staminad.sandbox.codekeep import (
    CODE_DIR,
    MAX_FILE_BYTES,
    keep_from_archive,
    keep_from_dir,
    keep_nothing,
    read_listing,
    read_text,
)

SECRET = "host secret that must never be kept\n"


def _workspace(tmp_path: Path) -> Path:
    """A workspace with text, a binary, a sparse huge file, links out, a FIFO and directories never entered."""
    ws = tmp_path / "workspace"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('hi')\n")
    (ws / "data.bin").write_bytes(b"\x89PNG\0\0\1")
    (ws / "latin1.txt").write_bytes(b"caf\xe9\n")
    with (ws / "huge.log").open("wb") as fh:
        fh.truncate(1 << 30)  # sparse: a GiB listed by size, never read
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    os.symlink(outside / "secret.txt", ws / "secret-link.txt")
    os.symlink(outside, ws / "linked-dir")
    os.mkfifo(ws / "pipe")
    for skipped in (".home/.claude", "node_modules/x", ".git/objects"):
        (ws / skipped).mkdir(parents=True)
        (ws / skipped / "f.txt").write_text("tool state\n")
    return ws


def test_a_workspace_is_listed_by_kind_and_only_text_is_kept(tmp_path: Path) -> None:
    """A workspace is listed by kind: text kept, binaries hashed, links and FIFOs never followed, deps skipped."""
    ws = _workspace(tmp_path)
    listing = keep_from_dir(ws, tmp_path, "t0000-a01-i00")
    files = listing.files
    assert files["src/app.py"].kind == "text" and files["src/app.py"].kept
    assert files["data.bin"].kind == "binary" and not files["data.bin"].kept and files["data.bin"].sha
    assert files["latin1.txt"].kind == "binary"
    assert files["huge.log"].kind == "large" and files["huge.log"].size == 1 << 30
    assert files["secret-link.txt"].kind == "link" and files["linked-dir"].kind == "link"
    assert files["pipe"].kind == "other"
    assert not [p for p in files if p.startswith((".home", "node_modules", ".git", "linked-dir/"))]
    assert read_text(tmp_path, files["src/app.py"].sha) == "print('hi')\n"
    assert listing.cut == "" and read_listing(tmp_path, "t0000-a01-i00") == listing
    kept = b"".join(p.read_bytes() for p in (tmp_path / CODE_DIR).rglob("*") if p.is_file())
    assert b"host secret" not in kept  # compressed blobs hold only app.py: the secret was never read


def test_an_unchanged_file_is_stored_once(tmp_path: Path) -> None:
    """Two attempts with the same file share one blob; a changed file adds one."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    keep_from_dir(ws, tmp_path, "t0000-a01-i00")
    keep_from_dir(ws, tmp_path, "t0000-a02-i00")
    assert len(list((tmp_path / CODE_DIR / "blobs").iterdir())) == 1
    (ws / "a.py").write_text("x = 2\n")
    keep_from_dir(ws, tmp_path, "t0001-a01-i00")
    assert len(list((tmp_path / CODE_DIR / "blobs").iterdir())) == 2


def test_an_archive_gives_the_same_listing_as_the_directory(tmp_path: Path) -> None:
    """A volume sandbox's snapshot (`get_archive` of /workspace/.) is listed like the directory, links unfollowed."""
    ws = tmp_path / "workspace"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('hi')\n")
    (ws / "bin").write_bytes(b"\0\1")
    (ws / ".home").mkdir()
    (ws / ".home" / "session.jsonl").write_text("{}\n")
    archive = tmp_path / "workspace.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(ws, arcname=".")
        link = tarfile.TarInfo("./etc-passwd")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
        evil = tarfile.TarInfo("../escape.py")
        data = b"bad\n"
        evil.size = len(data)
        tar.addfile(evil, io.BytesIO(data))
    from_dir = keep_from_dir(ws, tmp_path / "a", "t0000-a01-i00")
    from_tar = keep_from_archive(archive, tmp_path / "b", "t0000-a01-i00")
    assert {p: f for p, f in from_tar.files.items() if p != "etc-passwd"} == from_dir.files
    assert from_tar.files["etc-passwd"].kind == "link" and not (tmp_path / "escape.py").exists()


def test_bounds_cut_the_listing_and_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the file count the listing stops; past the scenario's store size new contents are listed unkept."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    for i in range(5):
        (ws / f"f{i}.py").write_text(f"v = {i}\n" * 50)
    monkeypatch.setattr(codekeep, "MAX_FILES", 3)
    listing = keep_from_dir(ws, tmp_path, "t0000-a01-i00")
    assert len(listing.files) == 3 and "first 3 files" in listing.cut
    monkeypatch.setattr(codekeep, "MAX_FILES", 100)
    monkeypatch.setattr(codekeep, "SCENARIO_BYTES", 0)
    (ws / "f0.py").write_text("changed\n")
    listing = keep_from_dir(ws, tmp_path, "t0000-a02-i00")
    assert not listing.files["f0.py"].kept and "new contents are not kept" in listing.cut


def test_a_file_just_over_the_bound_is_listed_by_size(tmp_path: Path) -> None:
    """A text file one byte over MAX_FILE_BYTES is `large`: listed, not read."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "big.py").write_text("x" * (MAX_FILE_BYTES + 1))
    assert keep_from_dir(ws, tmp_path, "t0000-a01-i00").files["big.py"].kind == "large"


def test_what_is_read_back_is_checked(tmp_path: Path) -> None:
    """A listing that is a link, a blob whose content is not its hash, or a bad job name read as nothing."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    sha = keep_from_dir(ws, tmp_path, "t0000-a01-i00").files["a.py"].sha
    blob = tmp_path / CODE_DIR / "blobs" / sha
    blob.write_bytes(b"not zlib")
    assert read_text(tmp_path, sha) is None and read_text(tmp_path, "../../etc/passwd") is None
    code = tmp_path / CODE_DIR
    (code / "t0000-a01-i00.json").unlink()
    os.symlink(tmp_path / "elsewhere.json", code / "t0000-a01-i00.json")
    (tmp_path / "elsewhere.json").write_text('{"taken_at": 1, "files": {}}')
    assert read_listing(tmp_path, "t0000-a01-i00") is None
    assert read_listing(tmp_path, "../t0000-a01-i00") is None
    keep_nothing(tmp_path, "t0000-a02-i00", "the workspace archive is over 256 MiB")
    kept = read_listing(tmp_path, "t0000-a02-i00")
    assert kept is not None and kept.skipped == "the workspace archive is over 256 MiB" and not kept.files


def test_links_planted_where_code_is_kept_are_never_written_through(tmp_path: Path) -> None:
    """A link at `code/`, at a blob's part file or at a listing's name is replaced or moved aside, never followed."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "victim"
    target.write_text("untouched\n")
    os.symlink(outside, tmp_path / CODE_DIR)  # the whole code directory pointing elsewhere
    keep_from_dir(ws, tmp_path, "t0000-a01-i00")
    assert sorted(p.name for p in outside.iterdir()) == ["victim"] and target.read_text() == "untouched\n"
    assert not (tmp_path / CODE_DIR).is_symlink() and read_listing(tmp_path, "t0000-a01-i00") is not None
    sha = read_listing(tmp_path, "t0000-a01-i00").files["a.py"].sha  # type: ignore[union-attr]
    (ws / "a.py").write_text("x = 2\n")
    new_sha = hashlib.sha256(b"x = 2\n").hexdigest()
    os.symlink(target, tmp_path / CODE_DIR / "blobs" / f"{new_sha}.part")
    os.symlink(target, tmp_path / CODE_DIR / "t0000-a02-i00.json")
    keep_from_dir(ws, tmp_path, "t0000-a02-i00")
    assert target.read_text() == "untouched\n"
    assert not (tmp_path / CODE_DIR / "t0000-a02-i00.json").is_symlink()
    kept = read_listing(tmp_path, "t0000-a02-i00")
    assert kept is not None and kept.files["a.py"].sha == new_sha != sha
    assert read_text(tmp_path, new_sha) == "x = 2\n"
