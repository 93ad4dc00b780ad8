"""`staminad --version` and `--help` start light: they import no command module, nor anything heavy those pull in
(the engine, the sandbox runtimes, the store, the analysis stack); and the placeholders they list say what each
command's own parser says."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

import pytest

from staminad import cli

# Packages a start that only prints must not import (each would cost tens to hundreds of ms of CPU).
HEAVY = (
    "staminad.commands",
    "staminad.engine",
    "staminad.sandbox",
    "staminad.suite",
    "staminad.bench",
    "staminad.agents",
    "staminad.reference",
    "staminad.analysis",
    "staminad.daemon",
    "state",
    "protocol.messages",
    "anyio",
    "msgspec",
    "aiosqlite",
    "aiodocker",
    "httpx",
    "numpy",
    "scipy",
    "matplotlib",
    "pyarrow",
    "textual",
    "starlette",
    "jinja2",
    "prometheus_client",
)

_PROBE = """
import contextlib, io, json, sys
from staminad.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _start(*argv: str) -> dict[str, object]:
    """Run `staminad ARGV` in a fresh interpreter; its exit code, output and every module it imported."""
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_nothing_heavy(flag: str) -> None:
    """`staminad --version` / `--help` print and exit 0 without importing any package of HEAVY."""
    found = _start(flag)
    modules = found["modules"]
    assert isinstance(modules, list)
    heavy = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert found["code"] == 0 and heavy == [], heavy
    assert "staminad" in str(found["out"])


def test_a_named_command_loads_its_module_alone() -> None:
    """`staminad status --help` imports the clients' module, not the daemon's, the engine or the oracle's."""
    modules = _start("status", "--help")["modules"]
    assert isinstance(modules, list)
    assert "staminad.commands.clients" in modules
    assert not [m for m in modules if m.startswith(("staminad.commands.daemon", "staminad.engine", "staminad.suite"))]
    assert "staminad.commands.oracle" not in modules and "staminad.commands.report" not in modules


def test_every_placeholder_says_what_its_module_says() -> None:
    """Each help line in cli.COMMANDS is its module's, and no module adds a command COMMANDS lacks."""
    parser = cli.build_parser(*cli.COMMANDS)  # every module loaded
    sub = next(a for a in parser._actions if isinstance(a, cli.LazyCommands))
    assert isinstance(sub, cli.LazyCommands)
    assert sub.loaded == {module for module, _ in cli.COMMANDS.values()}
    probe = argparse.ArgumentParser().add_subparsers()
    for module in sorted(sub.loaded):
        importlib.import_module(f"staminad.commands.{module}").add_parsers(probe)
    given = {a.dest: str(a.help) for a in probe._choices_actions}
    assert given == {name: helptext for name, (_, helptext) in cli.COMMANDS.items()}


@pytest.mark.parametrize("command", ["run", "start"])
def test_a_runners_help_reads_the_runtime_registry_without_the_engine(command: str) -> None:
    """`run --help` and `start --help` list the runtimes from the registry, importing no engine, suite or agent."""
    found = _start(command, "--help")
    modules = found["modules"]
    assert isinstance(modules, list)
    engine = (
        "staminad.engine",
        "staminad.suite.generate",
        "staminad.agents",
        "staminad.sandbox.docker.bindsandbox",
        "httpx",
    )
    heavy = [m for m in modules if any(m == h or m.startswith(h + ".") for h in engine)]
    assert found["code"] == 0 and heavy == [], heavy
    assert "docker: sealed containers" in str(found["out"]).replace("\n", " ").replace("  ", " ")
