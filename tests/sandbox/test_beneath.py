"""The one way the host side touches what an agent can write: beneath a root, no link followed, bounded."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from staminad.sandbox.inside.beneath import (
    MOVED_ASIDE,
    UnsafePathError,
    WalkBudget,
    create_file,
    ensure_dir,
    glob,
    open_regular,
    read_file,
    tree_bytes,
    walk_files,
)
from staminad.sandbox.inside.loc import count_loc


@pytest.fixture
def host(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace root and, beside it, a 'host' directory the agent must never reach through a link."""
    ws, outside = tmp_path / "workspace", tmp_path / "host"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("root only\n")
    return ws, outside


def _snapshot(path: Path) -> dict[str, tuple[int, int, int, bytes]]:
    """Every entry below `path` with its mode, owner, group and (for files) contents."""
    seen = {}
    for p in sorted(path.rglob("*")):
        st = p.lstat()
        seen[str(p.relative_to(path))] = (st.st_mode, st.st_uid, st.st_gid, p.read_bytes() if p.is_file() else b"")
    return seen


def test_a_link_at_any_component_is_never_followed(host: tuple[Path, Path]) -> None:
    """Reads and creations refuse a symlink as the file or as any directory on the way, dangling or not."""
    ws, outside = host
    before = _snapshot(outside)
    (ws / "dir").symlink_to(outside)
    (ws / "file").symlink_to(outside / "secret")
    (ws / "dangling").symlink_to(outside / "created-by-root")
    for rel in ("dir/secret", "file"):
        with pytest.raises(UnsafePathError):
            read_file(ws, rel, 100)
    with pytest.raises(UnsafePathError):
        create_file(ws, "dir/new", b"x")
    assert create_file(ws, "dangling", b"x") is False  # something is there: never written through
    assert create_file(ws, "fresh", b"data") is True and (ws / "fresh").read_bytes() == b"data"
    with pytest.raises(UnsafePathError):
        read_file(ws, "../host/secret", 100)
    with pytest.raises(UnsafePathError):
        read_file(ws, "/etc/hostname", 100)
    assert _snapshot(outside) == before


def test_ensure_dir_moves_aside_what_stands_in_the_way_and_chowns_only_what_it_opened(host: tuple[Path, Path]) -> None:
    """A link to a host directory, a file or a FIFO where `.home` belongs is moved aside; the host is untouched."""
    ws, outside = host
    before = _snapshot(outside)
    owner = (os.getuid() + 12345, os.getgid() + 12345) if os.getuid() == 0 else None
    for plant in (lambda p: p.symlink_to(outside), lambda p: p.write_text("x"), lambda p: os.mkfifo(p)):
        home = ws / ".home"
        plant(home)
        ensure_dir(ws, ".home", 0o755, owner)
        assert home.is_dir() and not home.is_symlink()
        if owner is not None:
            assert (home.stat().st_uid, home.stat().st_gid) == owner
        home.rmdir()
    assert sorted(p.name for p in ws.iterdir()) == sorted(
        [f".home{MOVED_ASIDE}", f".home{MOVED_ASIDE}.1", f".home{MOVED_ASIDE}.2"]
    )
    assert _snapshot(outside) == before


def test_a_fifo_is_refused_without_blocking(host: tuple[Path, Path]) -> None:
    """A FIFO where a regular file is expected is refused at once, with no writer ever coming."""
    ws, _ = host
    os.mkfifo(ws / "zz.py")
    with pytest.raises(UnsafePathError):
        open_regular(ws, "zz.py")
    done = threading.Event()
    result: list[int] = []

    def count() -> None:
        result.append(count_loc(ws))
        done.set()

    threading.Thread(target=count, daemon=True).start()
    assert done.wait(30), "the line count blocked on a FIFO"
    assert result == [0]


def test_walks_are_bounded_and_skip_links(host: tuple[Path, Path]) -> None:
    """A walk never enters a linked directory, stops at its entry bound, and a sparse file costs only what it holds."""
    ws, outside = host
    (outside / "big.py").write_text("x = 1\n" * 100)
    (ws / "linked").symlink_to(outside)
    (ws / "app.py").write_text("a = 1\n\nb = 2\n")
    with open(ws / "sparse.bin", "wb") as fh:
        fh.truncate(1 << 40)  # a terabyte that holds nothing
    names = [rel for rel, _st, _fd in walk_files(ws, WalkBudget(1000, 30))]
    assert "linked" in names and not any(n.startswith("linked/") for n in names)
    assert count_loc(ws) == 2
    assert tree_bytes(ws, WalkBudget(1000, 30)) < 1 << 20
    for i in range(50):
        (ws / f"f{i}").touch()
    budget = WalkBudget(10, 30)
    assert len(list(walk_files(ws, budget))) <= 10 and budget.exhausted == "entries"


def test_glob_matches_per_component_without_following_links(host: tuple[Path, Path]) -> None:
    """A HOME-relative pattern finds the agent's session files, never ones reached through a linked directory."""
    ws, outside = host
    (ws / ".home" / ".claude" / "projects" / "p").mkdir(parents=True)
    (ws / ".home" / ".claude" / "projects" / "p" / "s.jsonl").write_text("{}\n")
    (outside / "q").mkdir()
    (outside / "q" / "t.jsonl").write_text("{}\n")
    (ws / ".home" / ".claude" / "projects" / "q").symlink_to(outside / "q")
    found = [rel for rel, _ in glob(ws, ".home/.claude/projects/*/*.jsonl", WalkBudget(100, 30))]
    assert found == [".home/.claude/projects/p/s.jsonl"]


def test_a_walk_holds_descriptors_only_along_its_path(tmp_path: Path) -> None:
    """Hundreds of sibling directories cost a walk no more open descriptors than one directory deep does."""
    for i in range(300):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / "m.py").write_text("x = 1\n")
    base = len(os.listdir("/proc/self/fd"))
    most = 0
    for _rel, _st, _fd in walk_files(tmp_path, WalkBudget(10_000, 30)):
        most = max(most, len(os.listdir("/proc/self/fd")) - base)
    assert most <= 6
    assert count_loc(tmp_path) == 300
