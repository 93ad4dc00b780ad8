"""The layering in ARCHITECTURE.md holds: checked on the imports each package's modules actually make."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# package -> top-level modules it must never import
FORBIDDEN = {
    "staminad/bench": ("textual", "staminad.engine", "staminad.daemon", "staminad.suite", "protocol", "tui",
                       "aiosqlite", "aiodocker"),
    "protocol": ("textual", "staminad", "tui", "state"),
    "tui": ("staminad", "state"),
    "state": ("textual", "staminad", "tui", "protocol"),
    "staminad": ("textual", "tui"),
}
UI_FREE = ("tui/board.py", "tui/link.py")  # the monitor's model and connection stay free of Textual


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _hits(names: set[str], banned: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names for b in banned if n == b or n.startswith(b + "."))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_respect_the_layers(package: str) -> None:
    """No module of the package imports a layer it must not depend on."""
    bad = {str(p.relative_to(ROOT)): _hits(_imports(p), FORBIDDEN[package])
           for p in (ROOT / package).rglob("*.py")}
    assert {k: v for k, v in bad.items() if v} == {}


def test_tui_model_and_link_do_not_need_textual() -> None:
    """The board and the link can be used (and tested) without Textual."""
    for rel in UI_FREE:
        assert _hits(_imports(ROOT / rel), ("textual",)) == [], rel
