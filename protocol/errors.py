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


__all__ = ["ExpectedError", "UsageError"]
