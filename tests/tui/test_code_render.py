"""The scenario screen's code change as markup: placed after the failing tests, the agent's lines shown literally."""

from __future__ import annotations

import pytest
from textual.markup import to_content

from protocol import AttemptTexts, CodeChange
from protocol.messages import FailedTest, FileChange
from tui.markup import literal
from tui.screens.scenario import render_attempt

NASTY = ['"entities": [', "[red]not a tag[/red]", "path = C:\\temp\\", "x[0] = y[1]", "[/b]"]


def test_the_code_change_follows_the_failing_tests_and_shows_the_agents_lines_as_they_are() -> None:
    """The code change sits between failing tests and logs, with markup-like text shown as written."""
    diff = "--- a/app.py\n+++ b/app.py\n@@ -1,5 +1,5 @@\n" + "".join(f"+{line}\n" for line in NASTY)
    code = CodeChange(
        id=2,
        base="turn 0, attempt 1",
        base_id=1,
        files=(
            FileChange(path="app[1].py", status="changed", added=5),
            FileChange(path="b.bin", status="added", note="binary, 3 bytes"),
        ),
        added=5,
        diff=diff,
        cut=("the listing of [x] was cut",),
    )
    failure = FailedTest(name="t", category="crud", rule="r", message="m", request="GET /", status=500, response="")
    texts = AttemptTexts(id=2, prompt_kind="feedback", prompt="p", feedback="f", failures=(failure,))
    plain = to_content(render_attempt(texts, None, code)).plain
    assert plain.index("failing tests (1)") < plain.index("code change") < plain.index("harness log")
    assert "code change 2 files changed, +5 -0 lines, against turn 0, attempt 1" in plain
    assert "changed  app[1].py +5 -0" in plain and "(binary, 3 bytes)" in plain and "cut: the listing of [x]" in plain
    for line in NASTY:
        assert f"\n+{line}" in plain, line


@pytest.mark.parametrize(
    "text",
    ['"entities": [', "\\[b]x", "[b]", "[/]", "[@click=app.quit]y[/]", "a\\", "a\\\\[b]c", "[[", "x [\n y [b]", "[/i]"],
)
def test_text_from_outside_shows_literally_inside_markup(text: str) -> None:
    """Any string an agent or a sweep file wrote comes out of Textual's markup parser exactly as written."""
    plain = to_content(f"[b]A[/b] {literal(text)} [i]B[/i]").plain
    assert plain.replace("  B", " B") == f"A {text} B"
