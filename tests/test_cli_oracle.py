"""The oracle commands end to end: `reference serve` + `suite run`, `scenario openapi`, and their bad input."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from staminad.bench.pack import build_pack
from staminad.bench.scenario import ScenarioParams
from staminad.packio import write_pack
from tests.helpers import free_port, listening

CLI = [sys.executable, "-m", "staminad.cli"]


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pack")
    write_pack(path, build_pack([0, 1], ScenarioParams(turns=6)))
    return path


def serve(pack: Path, *extra: str) -> contextlib.AbstractContextManager[str]:
    port = free_port()
    return listening(
        [*CLI, "reference", "serve", "--pack", str(pack), "--seed", "1", "--turn", "6", "--port", str(port), *extra],
        port,
    )


def _suite_run(pack: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "suite", "run", "--pack", str(pack), "--seed", "1", "--turn", "6", "--url", url, *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_suite_run_passes_against_reference_serve(pack: Path) -> None:
    """`suite run` against `reference serve` of the same turn exits 0 and reports the pass count."""
    with serve(pack) as url:
        done = _suite_run(pack, url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tests passed" in done.stdout


def test_suite_run_prints_feedback_for_a_mutant(pack: Path) -> None:
    """Against a mutant, `suite run` exits 1 and prints the requested feedback level."""
    with serve(pack, "--bug", "exclusive-bounds") as url:
        done = _suite_run(pack, url, "--feedback", "medium")
    assert done.returncode == 1
    assert "tests failed:" in done.stdout and "_at_" in done.stdout


def test_openapi_command_prints_json(pack: Path) -> None:
    """`scenario openapi` prints an OpenAPI 3.1 document."""
    done = subprocess.run(
        [*CLI, "scenario", "openapi", "--pack", str(pack), "--seed", "0", "--turn", "3"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout)["openapi"] == "3.1.0"


@pytest.mark.parametrize(
    "argv",
    [
        ["suite", "run", "--seed", "1", "--turn", "99", "--url", "http://127.0.0.1:1"],
        ["suite", "run", "--seed", "1", "--turn", "1", "--url", "ftp://x"],
        ["suite", "run", "--seed", "5", "--turn", "1", "--url", "http://127.0.0.1:1"],
        ["reference", "serve", "--seed", "1", "--turn", "1", "--port", "70000"],
        ["validate", "--agents", "reference,no-such-mutant", "--seeds", "0", "--turns", "1"],
    ],
)
def test_bad_oracle_arguments_exit_2_with_one_line(pack: Path, argv: list[str]) -> None:
    """Out-of-range turns, bad URLs, unknown seeds, ports or agents: exit 2 with one error line."""
    if argv[0] != "validate":
        argv = [*argv[:2], "--pack", str(pack), *argv[2:]]
    done = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "error" in done.stderr


def test_suite_run_against_nothing_fails_fast(pack: Path) -> None:
    """With no server listening, `suite run` reports the server as not running and exits 1."""
    done = _suite_run(pack, f"http://127.0.0.1:{free_port()}", "--feedback", "detailed")
    assert done.returncode == 1
    assert "stopped responding" in done.stdout


@pytest.mark.parametrize("timeout", ["nan", "-1", "0", "inf", "1e9"])
def test_suite_run_refuses_a_timeout_a_sweep_file_would_refuse(
    pack: Path, timeout: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`suite run --timeout` has `run.request_timeout`'s bound: NaN, negative, zero or over a week is exit 2."""
    from staminad.cli import build_parser

    argv = ["suite", "run", "--pack", str(pack), "--seed", "1", "--turn", "1", "--url", "http://127.0.0.1:1"]
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([*argv, "--timeout", timeout])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1 and f"--timeout: {timeout} is not a positive" in err
    assert build_parser().parse_args([*argv, "--timeout", "604800"]).timeout == 604800.0
