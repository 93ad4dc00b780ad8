"""The shared argument parser: a usage error is one line ending in `(see --help)`, exit status 2."""

from __future__ import annotations

import pytest

from protocol.usage import OneLineParser, integer


def test_a_usage_error_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown option prints `PROG: error: MESSAGE (see --help)` alone (no usage block) and exits 2."""
    parser = OneLineParser(prog="prog")
    parser.add_argument("--port", type=int)
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["--port", "abc"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err == "prog: error: argument --port: invalid int value: 'abc' (see --help)\n"


@pytest.mark.parametrize("text", ["1_0", " 5", "5 ", "+1", "1.0", "1e3", "", "-", "\u0663", "\uff11", "9" * 5000])
def test_an_integer_flag_takes_ascii_digits_only(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`integer` refuses what `int()` would also take (separators, spaces, a plus, other scripts) in one line."""
    parser = OneLineParser(prog="prog")
    parser.add_argument("--n", type=integer)
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["--n", text])
    assert exited.value.code == 2
    assert (
        capsys.readouterr().err
        == f"prog: error: argument --n: {text!r} is not an integer (digits 0-9 only) (see --help)\n"
    )
    assert [integer(t) for t in ("0", "007", "-3", "65535")] == [0, 7, -3, 65535]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--bogus"], "prog: error: unrecognized arguments: --bogus (see --help)\n"),
        (["go", "--n", "3", "--bogus"], "prog go: error: unrecognized arguments: --bogus (see --help)\n"),
        (["go", "--n", "-3"], "prog go: error: the following arguments are required: target (see --help)\n"),
        ([], "prog: error: the following arguments are required: command (see --help)\n"),
    ],
)
def test_an_unknown_option_is_named_even_with_a_required_argument_missing(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`prog --bogus` names `--bogus`, not the missing subcommand; with no unknown option the missing one is named."""
    parser = OneLineParser(prog="prog")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    go = sub.add_parser("go")
    go.add_argument("target")
    go.add_argument("--n", type=integer)
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(argv)
    assert exited.value.code == 2 and capsys.readouterr().err == says
