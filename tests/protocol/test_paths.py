"""Where the state directory is: the flag, the environment variable and the default, made absolute once."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.paths import resolve_state_dir
from staminad.cli import main


def test_a_relative_flag_is_made_absolute_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--state-dir rel` and `STAMINAD_STATE_DIR=rel` both become `$PWD/rel`."""
    monkeypatch.chdir(tmp_path)
    assert resolve_state_dir(Path("rel")) == tmp_path / "rel"
    monkeypatch.setenv("STAMINAD_STATE_DIR", "envrel")
    assert resolve_state_dir(None) == tmp_path / "envrel"


def test_an_empty_environment_variable_means_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`STAMINAD_STATE_DIR=` falls back to the XDG state home, not the current directory."""
    monkeypatch.setenv("STAMINAD_STATE_DIR", "")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert resolve_state_dir(None) == tmp_path / "xdg" / "staminabench"


@pytest.mark.parametrize(
    "argv", [["status"], ["logs"], ["start"], ["report"], ["export", "--out", "x.csv"], ["view"], ["run", "x.toml"]]
)
def test_an_empty_state_dir_flag_is_refused_in_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """`--state-dir ""` is a usage error (exit 2, one line), not the current directory."""
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--state-dir", ""])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--state-dir: must not be empty" in err
