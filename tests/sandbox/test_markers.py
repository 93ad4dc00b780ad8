"""Completion markers: the wrapper's are read as written; one with an unusable field is the harness's crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from staminad.engine.outcome import classify_harness
from staminad.sandbox.markers import check_marker, read_marker

WRAPPER = '{"exit": 137, "signal": 9, "started": 1796155934.271380123, "ended": 1796155990.5, "over_quota": null}\n'


@pytest.mark.parametrize(
    "text",
    [
        WRAPPER,
        '{"exit": 0, "signal": null, "started": 1796155934.25, "ended": 1796155934.25}',  # `staminad done`
        '{"exit": 255, "signal": 127, "started": 0, "ended": null}',
        '{"exit": null, "signal": 15}',
        '{"signal": 99999999999999999999999}',  # no exit: not a marker yet, waited past as before
    ],
)
def test_a_usable_marker_is_read_exactly_as_written(tmp_path: Path, text: str) -> None:
    """Every field of a marker whose exit, signal and times are in range is kept as written, plus `seen_at`."""
    path = tmp_path / "m.json"
    path.write_text(text)
    marker = read_marker(path)
    assert marker is not None and {k: v for k, v in marker.items() if k != "seen_at"} == json.loads(text)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"exit": 99999999999999999999999, "signal": null}', "exit 99999999999999999999999 is not null"),
        ('{"exit": -3}', "exit -3 is not"),
        ('{"exit": 256}', "0..255"),
        ('{"exit": 0.0}', "exit 0.0 is not"),
        ('{"exit": true}', "exit true is not"),
        ('{"exit": "0"}', 'exit "0" is not'),
        ('{"exit": 0, "signal": 99999999999999999999999}', "0..127"),
        ('{"exit": 0, "signal": -1}', "signal -1"),
        ('{"exit": 0, "signal": [9]}', "signal (a JSON array)"),
        ('{"exit": 0, "started": 1e999, "ended": -1e999}', "started Infinity is not null or a time"),
        ('{"exit": 0, "started": 1, "ended": NaN}', "ended NaN"),
        ('{"exit": 0, "started": 1, "ended": 1e12}', "ended 1000000000000.0"),
        ('{"exit": 0, "started": -5, "ended": 1}', "started -5"),
        ('{"exit": 0, "signal": null, "started": 1e10, "ended": 1}', "ended 1 is before started 10000000000.0"),
        ('{"exit": 0, "started": 1796155934.5, "ended": 1796155934.25}', "ended 1796155934.25 is before started"),
        ('{"exit": 0, "started": "' + "x" * 5000 + '"}', '"xxxxxxxx'),
    ],
)
def test_a_marker_with_an_unusable_field_is_a_harness_crash_saying_why(tmp_path: Path, text: str, says: str) -> None:
    """An out-of-range or mistyped exit, signal or time leaves no exit, no signal, no times: a harness crash."""
    path = tmp_path / "m.json"
    path.write_text(text)
    marker = read_marker(path)
    assert marker is not None and set(marker) == {"exit", "signal", "error", "seen_at"}
    assert marker["error"].startswith("unusable marker: ") and says in marker["error"]
    assert len(marker["error"]) < 120
    assert classify_harness(marker["exit"], marker["signal"], killed_by_engine=False) == "harness_crash"


def test_a_deeply_nested_marker_is_unreadable_not_an_exception(tmp_path: Path) -> None:
    """64 KiB of `[` (past the JSON parser's recursion limit) reads as an unreadable marker."""
    path = tmp_path / "m.json"
    path.write_text("[" * 60000)
    marker = read_marker(path)
    assert marker is not None and marker["exit"] is None and marker["error"].startswith("unreadable marker: ")


def test_a_marker_from_the_in_container_launcher_is_checked_the_same_way() -> None:
    """`check_marker` (what a volume sandbox's answers go through) refuses what `read_marker` refuses."""
    assert check_marker({"exit": 0, "ended": float("inf")}, 1.0)["error"].startswith("unusable marker: ended")
    assert check_marker([1], 1.0)["error"] == "unreadable marker: not a JSON object"
    assert check_marker({"exit": 3, "started": 1.5, "ended": 2.5}, 7.0) == {
        "exit": 3,
        "started": 1.5,
        "ended": 2.5,
        "seen_at": 7.0,
    }
