"""The shared argument parser: a usage error is one line ending in `(see --help)`, exit status 2."""

from __future__ import annotations

import pytest

from protocol.usage import PROG_ENV, OneLineParser, did_you_mean, hint, integer, options_after_command, program


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


def _tree() -> OneLineParser:
    """A parser shaped like staminad's: subcommands, one nested, each with its own `--state-dir`."""
    parser = OneLineParser(prog="prog")
    parser.add_argument("--version", action="version", version="1")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    report = sub.add_parser("report")
    report.add_argument("--state-dir")
    report.add_argument("--force", action="store_true")
    image = sub.add_parser("image")
    nested = image.add_subparsers(dest="image_cmd", required=True, parser_class=OneLineParser)
    nested.add_parser("build").add_argument("--layer", choices=("base", "tools"))
    return parser


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["reprot"], "did you mean 'report'?"),
        (["image", "biuld"], "did you mean 'build'?"),
        (["image", "build", "--layer", "tool"], "did you mean 'tools'?"),
    ],
)
def test_a_near_miss_of_a_choice_says_did_you_mean(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt subcommand or choice is refused in one line that names the closest valid one."""
    with pytest.raises(SystemExit) as exited:
        _tree().parse_args(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and says in err and err.count("\n") == 1


def test_a_choice_far_from_every_name_gets_no_guess(capsys: pytest.CaptureFixture[str]) -> None:
    """A word close to nothing lists the choices and guesses nothing."""
    with pytest.raises(SystemExit):
        _tree().parse_args(["zzzzzz"])
    err = capsys.readouterr().err
    assert "invalid choice: 'zzzzzz' (choose from 'report', 'image')" in err and "did you mean" not in err


@pytest.mark.parametrize(
    ("argv", "parsed"),
    [
        (["--state-dir", "/s", "report"], ["report", "--state-dir", "/s"]),
        (["--state-dir=/s", "--force", "report", "--force"], ["report", "--state-dir=/s", "--force", "--force"]),
        (["--state-dir", "report", "report"], ["report", "--state-dir", "report"]),
        (["--layer", "base", "image", "build"], ["image", "build", "--layer", "base"]),
        (["report", "--state-dir", "/s"], ["report", "--state-dir", "/s"]),
        (["--version"], ["--version"]),
        (["stray", "--state-dir", "/s"], ["stray", "--state-dir", "/s"]),
    ],
)
def test_options_before_the_subcommand_move_after_it(argv: list[str], parsed: list[str]) -> None:
    """A subcommand's option given before the subcommand (a value taken along) is moved after the whole path."""
    assert options_after_command(_tree(), argv) == parsed


def test_a_global_option_before_the_subcommand_parses() -> None:
    """`prog --state-dir D report` parses as `prog report --state-dir D`, not `invalid choice`."""
    parser = _tree()
    args = parser.parse_args(options_after_command(parser, ["--state-dir", "/s", "report"]))
    assert (args.command, args.state_dir) == ("report", "/s")


def test_hints_name_the_program_as_invoked(monkeypatch: pytest.MonkeyPatch) -> None:
    """`hint` and `program` say `./sb` under `STAMINAD_PROG=./sb`, `staminad` without it."""
    monkeypatch.delenv(PROG_ENV, raising=False)
    assert (program(), hint("retry")) == ("staminad", "staminad retry")
    monkeypatch.setenv(PROG_ENV, "./sb")
    assert (program(), hint("image build")) == ("./sb", "./sb image build")
    assert did_you_mean("reprot", ["report", "run"]) == "; did you mean 'report'?"
    assert did_you_mean("qqq", ["report", "run"]) == ""
