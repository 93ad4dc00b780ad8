"""What runs inside a sandbox (`staminad/sandbox/inside/`) imports the standard library only, and nothing else
of staminad but its own package: it is copied into the container's layer and run there by path."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

INSIDE = Path(__file__).resolve().parents[2] / "staminad" / "sandbox" / "inside"
OWN = "staminad.sandbox.inside"  # loc.py imports beneath through the package on the host, by path inside


def _imports(path: Path) -> set[str]:
    """The absolute module names `path` imports (relative imports as they resolve inside its package)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add(f"{OWN}.{node.module or ''}" if node.level else str(node.module))
    return found


def test_the_inside_of_a_sandbox_imports_only_the_standard_library() -> None:
    """Every import of every module under sandbox/inside/ is the stdlib's, `__future__`, or its own package's."""
    modules = sorted(INSIDE.glob("*.py"))
    assert len(modules) > 5
    foreign = {
        f"{path.name}: {name}"
        for path in modules
        for name in _imports(path)
        if name.split(".")[0] not in sys.stdlib_module_names | {"__future__"}
        and name != OWN
        and not name.startswith(f"{OWN}.")
    }
    assert not foreign, f"sandbox/inside/ runs in the container with the standard library only: {sorted(foreign)}"
