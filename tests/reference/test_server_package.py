"""The reference server package is standard library only and self-contained, as the sandboxes it is copied into need."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx

from staminad.reference.agent import SERVER_PACKAGE
from tests.helpers import free_port, listening

SERVER = Path(__file__).parents[2] / "staminad" / "reference" / "server"
# Imports the copied package with nothing else on sys.path and names every module loaded from outside the stdlib.
IMPORT_ALL = f"""
import pkgutil, sys
sys.path.insert(0, ".")
import {SERVER_PACKAGE}
for m in pkgutil.iter_modules({SERVER_PACKAGE}.__path__):
    if m.name != "__main__":
        __import__("{SERVER_PACKAGE}." + m.name)
stdlib = set(sys.stdlib_module_names) | set(sys.builtin_module_names) | {{"__main__"}}  # __main__: this script
print(sorted({{n.split(".")[0] for n in sys.modules}} - stdlib))
"""
SERVE = f"import runpy, sys; sys.path.insert(0, '.'); runpy.run_module('{SERVER_PACKAGE}', run_name='__main__')"


def _copy(tmp: Path) -> Path:
    """A directory holding only the package (as the reference agent copies it) and a one-entity config."""
    shutil.copytree(SERVER, tmp / SERVER_PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    entity = {"name": "Cup", "fields": [{"name": "size", "kind": "integer", "required": True}]}
    (tmp / "config.json").write_text(json.dumps({"schema": {"entities": [entity]}}))
    return tmp


def test_every_import_of_the_package_is_relative_or_of_the_standard_library() -> None:
    """No module of the package imports a third-party module, or staminad by its absolute name."""
    outside = []
    for path in sorted(SERVER.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            outside += [f"{path.name}: {n}" for n in names if n.split(".")[0] not in sys.stdlib_module_names]
    assert not outside


def test_the_copied_package_loads_nothing_outside_the_standard_library(tmp_path: Path) -> None:
    """Copied alone and imported under `-I -S` (no site-packages, no environment), it loads only stdlib modules."""
    ws = _copy(tmp_path)
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", IMPORT_ALL], cwd=ws, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"['{SERVER_PACKAGE}']", out.stderr


def test_the_copied_package_serves_alone_under_isolation(tmp_path: Path) -> None:
    """Run as `-m` under `-I -S` from a directory holding only it and a config, it answers over HTTP."""
    ws, port = _copy(tmp_path), free_port()
    argv = [sys.executable, "-I", "-S", "-B", "-c", SERVE, "--config", "config.json", "--port", str(port)]
    with listening([*argv, "--host", "127.0.0.1"], port, cwd=ws) as url:
        created = httpx.post(f"{url}/cup", json={"id": "c1", "size": 2}, timeout=5)
        listed = httpx.get(f"{url}/cup", timeout=5)
    assert (created.status_code, created.json()) == (201, {"id": "c1", "size": 2})
    assert listed.json() == [{"id": "c1", "size": 2}]
