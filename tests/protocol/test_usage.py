"""The shared argument parser: a usage error is one line ending in `(see --help)`, exit status 2."""

from __future__ import annotations

import pytest

from protocol.usage import OneLineParser


def test_a_usage_error_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown option prints `PROG: error: MESSAGE (see --help)` alone (no usage block) and exits 2."""
    parser = OneLineParser(prog="prog")
    parser.add_argument("--port", type=int)
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["--port", "abc"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err == "prog: error: argument --port: invalid int value: 'abc' (see --help)\n"
