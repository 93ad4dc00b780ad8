"""What the engine records of a suite's run, made where the suite ran (`SuiteVerdict`).

The engine keeps an attempt's per-test results only as the store holds them (compressed JSON), and
needs of the rest a few counts, the failed categories and the retry prompt. Made in the worker process
that ran the suite, only that crosses the pipe: decoding every test's result, encoding it again as
JSON and compressing it had been the daemon's event loop's largest cost per attempt. The in-thread
path makes the same verdict from the same result, so both record identical rows.
"""

from __future__ import annotations

import zlib

import msgspec

from protocol.kinds import Category
from staminad.suite.feedback import FeedbackLevel, render_feedback
from staminad.suite.runner import SuiteResult


class SuiteVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """A suite's run as the engine records it."""

    tests: int
    failed: int
    categories: tuple[Category, ...]  # the failed tests' categories, sorted, each once
    feedback: str | None  # the retry prompt at the scenario's feedback level; None when every test passed
    results: bytes  # the per-test results as the store keeps them: zlib-compressed JSON

    @property
    def passed(self) -> bool:
        return not self.failed


def verdict_of(result: SuiteResult, level: FeedbackLevel) -> SuiteVerdict:
    """The verdict of `result`, its feedback rendered at `level`."""
    failures = result.failures
    return SuiteVerdict(
        tests=len(result.results),
        failed=len(failures),
        categories=tuple(sorted({f.category for f in failures})),
        feedback=render_feedback(result, level) if failures else None,
        results=zlib.compress(msgspec.json.encode(result.results)),
    )
