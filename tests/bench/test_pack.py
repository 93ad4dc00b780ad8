"""Scenario packs: byte-identical rebuilds, exact reloads, tamper detection, and the scenario CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from staminad.bench.pack import PackError, build_pack, verify_pack
from staminad.bench.scenario import ScenarioParams, generate
from staminad.cli import main
from staminad.packio import read_pack, write_pack

PARAMS = ScenarioParams(turns=12, naming="programmatic")


def test_same_arguments_give_byte_identical_packs() -> None:
    """Building a pack twice yields the same bytes for every file, manifest included."""
    assert build_pack([0, 1, 2], PARAMS) == build_pack([0, 1, 2], PARAMS)


def test_pack_is_identical_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """A pack built by the CLI in another process matches one built here (no hidden process state)."""
    out = tmp_path / "pack"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "staminad.cli",
            "scenario",
            "generate",
            "--seeds",
            "0-2",
            "--turns",
            "12",
            "--naming",
            "programmatic",
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    here = build_pack([0, 1, 2], PARAMS)
    there = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert here == there


def test_loading_a_pack_reproduces_every_state(tmp_path: Path) -> None:
    """States replayed from a loaded pack equal the states of a freshly generated scenario."""
    write_pack(tmp_path, build_pack([4], PARAMS))
    pack = read_pack(tmp_path)
    loaded = list(pack.scenario(4).states())
    assert loaded == list(generate(4, PARAMS).states())
    assert len(loaded) == PARAMS.turns + 1
    assert pack.prompt(4, 0).startswith("Implement the REST API server")
    assert pack.prompt(4, 12).startswith("The tests passed.")


def test_tampered_file_is_named(tmp_path: Path) -> None:
    """Changing one byte of a pack file makes loading fail with that file's path."""
    write_pack(tmp_path, build_pack([0], PARAMS))
    victim = tmp_path / "scenarios/seed-00000/texts/prompt-0003.md"
    victim.write_bytes(victim.read_bytes().replace(b"the", b"teh", 1))
    with pytest.raises(PackError, match="prompt-0003.md does not match its sha256"):
        read_pack(tmp_path)


def test_missing_and_extra_files_are_named() -> None:
    """A file the manifest lists but the pack lacks, or an unlisted file, is refused by name."""
    files = build_pack([0], PARAMS)
    missing = dict(files)
    del missing["scenarios/seed-00000/scenario.json"]
    with pytest.raises(PackError, match=r"scenario.json is listed in the manifest but missing"):
        verify_pack(missing)
    with pytest.raises(PackError, match="notes.txt is not listed"):
        verify_pack({**files, "notes.txt": b"hi"})
    with pytest.raises(PackError, match="manifest.json is not a valid pack manifest"):
        verify_pack({**files, "manifest.json": b"{nope"})


def test_a_manifest_seed_past_the_seed_bound_is_refused() -> None:
    """A hand-edited manifest naming seed 2**63 is refused when read, as a seed list would be, not at the store."""
    import json

    files = build_pack([0], PARAMS)
    manifest = json.loads(files["manifest.json"])
    manifest["seeds"] = [2**63]
    with pytest.raises(PackError, match=r"manifest.json is not a valid pack manifest: .*<= 1000000000"):
        verify_pack({**files, "manifest.json": json.dumps(manifest).encode()})


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "argv",
    [
        ["scenario", "generate", "--seeds", "9-3", "-o", "x"],
        ["scenario", "generate", "--seeds", "a-b", "-o", "x"],
        ["scenario", "generate", "--turns", "-4", "-o", "x"],
        ["scenario", "generate", "--sampler", "greedy", "-o", "x"],
        ["scenario", "generate", "--changes-per-turn", "0", "-o", "x"],
        ["scenario", "generate", "--language", "c; rm -rf", "-o", "x"],
        ["scenario", "frobnicate"],
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """Bad ranges, values and flags exit with status 2 and a single error line."""
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "error" in err


def test_show_refuses_unknown_seed_and_non_pack(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`scenario show` explains in one line when the seed is not in the pack or the directory is no pack."""
    write_pack(tmp_path / "p", build_pack([0, 1], PARAMS))
    code, _, err = _run(capsys, "scenario", "show", str(tmp_path / "p"), "--seed", "7", "--turn", "1")
    assert code == 2 and "seed 7 is not in this pack (it holds seeds 0-1)" in err
    code, _, err = _run(capsys, "scenario", "show", str(tmp_path))
    assert code == 2 and "manifest.json" in err


def test_show_prints_counts_and_texts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`scenario show` prints per-turn counts, and a turn's texts with --seed/--turn."""
    write_pack(tmp_path, build_pack([0], PARAMS))
    code, out, _ = _run(capsys, "scenario", "show", str(tmp_path))
    assert code == 0 and "entities" in out and len(out.splitlines()) == 2 + PARAMS.turns + 1
    code, out, _ = _run(capsys, "scenario", "show", str(tmp_path), "--seed", "0", "--turn", "0")
    assert code == 0 and "# Instructions" in out and "# Specification" in out


def test_a_pack_file_past_the_size_bound_is_refused_having_read_only_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One file larger than the pack bound is not read whole before the bound is checked."""
    import staminad.packio as packio

    monkeypatch.setattr(packio, "MAX_PACK_BYTES", 1000)
    with (tmp_path / "big").open("wb") as fh:
        fh.truncate(10**12)  # sparse: free on disk, a terabyte if read whole
    with pytest.raises(PackError, match="larger than 1000 bytes"):
        read_pack(tmp_path)


def test_a_pack_file_that_is_not_a_regular_file_is_named_so(tmp_path: Path) -> None:
    """A manifest.json linked to /dev/zero, or a scenario.json that is a FIFO, is "not a regular file", not missing."""
    import os

    write_pack(tmp_path / "a", build_pack([0], PARAMS))
    (tmp_path / "a" / "manifest.json").unlink()
    (tmp_path / "a" / "manifest.json").symlink_to("/dev/zero")
    with pytest.raises(PackError, match=r"^manifest.json is not a regular file: not a scenario pack$"):
        read_pack(tmp_path / "a")
    write_pack(tmp_path / "b", build_pack([0], PARAMS))
    fifo = tmp_path / "b" / "scenarios/seed-00000/scenario.json"
    fifo.unlink()
    os.mkfifo(fifo)
    with pytest.raises(PackError, match=r"scenario.json is listed in the manifest but is not a regular file$"):
        read_pack(tmp_path / "b")
