"""The xdist groups of tests/helpers/parallel.py hold: each named file exists, and Docker tests share one worker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import parallel

ROOT = Path(__file__).resolve().parents[1]


def test_every_grouped_file_exists_and_is_in_one_group() -> None:
    """A renamed or removed test file cannot silently leave its group: each path names a test file, once."""
    paths = [path for group in parallel.GROUPS.values() for path in group]
    assert len(paths) == len(set(paths))
    assert [p for p in paths if not (ROOT / p).is_file() or not Path(p).name.startswith("test_")] == []


def test_a_docker_test_runs_in_the_docker_group_and_others_by_file_or_group() -> None:
    """A test marked docker is in DOCKER wherever it lives; an unmarked one is in its file's group, or its file."""

    class Item:
        def __init__(self, path: Path, marks: set[str]) -> None:
            self.path, self.marks = path, marks

        def get_closest_marker(self, name: str) -> pytest.Mark | None:
            return getattr(pytest.mark, name).mark if name in self.marks else None

    def group(path: str, marks: set[str]) -> str:
        return parallel.group_of(Item(ROOT / path, marks), ROOT)  # type: ignore[arg-type]

    grouped = parallel.GROUPS["viewer-store"][0]
    assert group(grouped, {"docker"}) == parallel.DOCKER
    assert group(grouped, {"sweep"}) == "viewer-store"
    assert group("tests/suite/test_pool.py", {"sweep"}) == "tests/suite/test_pool.py"


def test_sb_test_runs_in_parallel_by_group() -> None:
    """`./sb test` (both tiers) passes pytest `-n auto --dist loadgroup` before the caller's arguments."""
    sb = (ROOT / "sb").read_text()
    assert re.search(r"^PARALLEL=\(-n auto --dist loadgroup\)$", sb, re.M)
    assert 'pytest "${PARALLEL[@]}" ${tier[@]+"${tier[@]}"} "$@"' in sb
