"""The one base of expected failures: what a user can meet and fix, shown as one line, never a traceback.

Every layer raises its own subclass (a bad sweep file, a changed stored sweep, an unusable state dir);
the two edges catch the base once each: `staminad.cli.main` prints `staminad: error: LINE` and exits with
the error's `exit_status`, the daemon's socket handler answers `ErrorReply(LINE)`. Anything else is a bug
and keeps its traceback. Lives in `protocol` because it is the layer every other one may import.
"""

from __future__ import annotations

from typing import ClassVar


class ExpectedError(Exception):
    """A failure with a one-line message that says what to do; exit status 1 (the command could not work)."""

    exit_status: ClassVar[int] = 1


class UsageError(ExpectedError):
    """Bad input: arguments, a sweep file, a pack, a seed list. Exit status 2."""

    exit_status: ClassVar[int] = 2


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, as task groups raise them, in order; `[exc]` for one."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for member in exc.exceptions for leaf in leaves(member)]
    return [exc]


def describe(exc: BaseException) -> str:
    """One exception as a user reads it: an expected failure's line, an OS error's reason and file, else its type."""
    if isinstance(exc, ExpectedError):
        return str(exc)
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    return f"{type(exc).__name__}: {exc}"


def one_line(text: str) -> str:
    """`text` with its line breaks and other unprintable characters escaped (`\\n`), so it stays one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


__all__ = ["ExpectedError", "UsageError", "describe", "leaves", "one_line"]
