"""Every test function under tests/ has a docstring of exactly one line saying what it proves (the project rule)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def offences(path: Path) -> list[str]:
    """`name:line test: why` for each test function in `path` whose docstring is missing or spans lines."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.name.startswith("test"):
            continue
        first = node.body[0]
        where = f"{path.name}:{node.lineno} {node.name}"
        doc = first.value.value if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) else None
        if not isinstance(doc, str):
            found.append(f"{where}: no docstring")
        elif first.end_lineno != first.lineno:
            found.append(f"{where}: docstring spans {(first.end_lineno or first.lineno) - first.lineno + 1} lines")
    return found


def test_every_test_function_has_a_one_line_docstring() -> None:
    """No test function under tests/ lacks a docstring or has one spanning more than one line."""
    found = [
        f"{path.parent.relative_to(TESTS)}/{o}" for path in sorted(TESTS.rglob("test_*.py")) for o in offences(path)
    ]
    assert found == [], "give each a one-line docstring (details in a comment above the assertion):\n" + "\n".join(
        found
    )


def test_the_check_reports_a_missing_and_a_multi_line_docstring(tmp_path: Path) -> None:
    """A test without a docstring and one with a two-line docstring are reported; a one-line one is not."""
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        'def test_a():\n    """One."""\n\ndef test_b():\n    pass\n\nasync def test_c():\n    """One\n    two."""\n'
    )
    assert offences(sample) == [
        "test_sample.py:4 test_b: no docstring",
        "test_sample.py:7 test_c: docstring spans 2 lines",
    ]
