"""The layering in ARCHITECTURE.md holds: import-linter checks the contracts in pyproject.toml.

The contracts (bench <- suite <- engine <- daemon <- commands; protocol imports none of staminad, state
or tui; tui reaches the daemon only through protocol; no Textual below the TUI) live in one place,
`[tool.importlinter]`; this test runs them so `pytest` alone catches a wrong-direction import.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _lint_imports() -> str:
    exe = Path(sys.executable).with_name("lint-imports")
    return str(exe) if exe.exists() else shutil.which("lint-imports") or "lint-imports"


def test_import_contracts_are_kept() -> None:
    """Every import-linter contract of pyproject.toml is kept by the imports the code actually makes."""
    done = subprocess.run([_lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout


def test_the_contracts_cover_each_documented_layer() -> None:
    """The configuration names the layers and packages ARCHITECTURE.md documents (a contract cannot go missing)."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = [c["layers"] for c in contracts if c["type"] == "layers"]
    assert [
        "staminad.commands",
        "staminad.daemon",
        "staminad.engine",
        "staminad.sandbox",
        "staminad.suite",
        "staminad.bench",
    ] in layers
    assert ["tui.app", "tui.screens", "tui.components", "tui.board | tui.link | tui.markup"] in layers
    forbidden = {tuple(c["source_modules"]): set(c["forbidden_modules"]) for c in contracts if c["type"] == "forbidden"}
    assert {"staminad", "state", "tui"} <= forbidden[("protocol",)]
    assert {"staminad", "state"} <= forbidden[("tui",)]
    assert "textual" in forbidden[("staminad", "protocol", "state", "tui.board", "tui.link", "tui.markup")]


def test_every_package_sits_in_one_stack_and_no_siblings_import_each_other_in_a_cycle() -> None:
    """The whole-tree stack is exhaustive over staminad, and the acyclic contract covers every root package."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    stack = next(c for c in contracts if c.get("containers") == ["staminad"])
    assert stack["type"] == "layers" and stack["exhaustive"] is True
    placed = {part.strip() for layer in stack["layers"] for part in layer.replace(":", "|").split("|")}
    packages = {p.name for p in (ROOT / "staminad").iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in (ROOT / "staminad").glob("*.py") if p.stem != "__init__"}
    assert placed == packages | modules
    acyclic = next(c for c in contracts if c["type"] == "acyclic_siblings")
    assert set(acyclic["ancestors"]) == {"staminad", "protocol", "state", "tui"}
