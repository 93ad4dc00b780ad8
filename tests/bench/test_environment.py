"""The sandbox's offer is one list: the README states it, the image's lock pins it, and both agree."""

from __future__ import annotations

import json

from staminad.bench.environment import PYTHON_PACKAGES, module_names, node_offer, python_offer, python_pins
from staminad.bench.readme import RULES, render_readme
from staminad.sandbox.docker.stacks import LOCK


def test_the_lock_pins_every_package_the_readme_names_at_its_version() -> None:
    """Each README package (extras stripped) is in locks/stacks.json at the version the README states."""
    locked = dict(pin.split("==") for pin in json.loads(LOCK.read_text())["pins"])
    for pin in python_pins():
        name, version = pin.split("==")
        assert locked.get(name.split("[")[0]) == version, pin
    assert {"werkzeug", "pydantic-core", "uvloop", "asgiref"} <= set(locked)  # their dependencies are pinned too


def test_the_python_readme_says_what_is_installed_and_that_nothing_downloads() -> None:
    """The language rule names every package and version, the offline pip and venv, and no network."""
    text = render_readme("python")
    line = next(x for x in text.splitlines() if x.startswith("- [language]"))
    assert python_offer() in line and "without network access" in line and "python3 -m venv" in line
    for _, version, label in PYTHON_PACKAGES:
        assert f"{label} {version}" in line
    assert "Any other library or version is not available" in line
    assert "from what the sandbox offers" in RULES["run-script"]


def test_the_node_readme_names_express_and_other_languages_only_the_standard_library() -> None:
    """JavaScript and TypeScript get Node and Express (no npm registry); Rust only hears that nothing downloads."""
    for language in ("javascript", "typescript"):
        text = render_readme(language)
        assert node_offer() in text and "`require('express')` works without `npm install`" in text
        assert "Flask" not in text
    rust = render_readme("rust")
    assert "nothing can be downloaded" in rust and "Flask" not in rust and "Express" not in rust


def test_module_names_are_what_an_import_names() -> None:
    """Packages whose import name differs from the distribution are known by the import name."""
    assert {"flask", "flask_cors", "rest_framework", "uvicorn", "django", "sqlalchemy"} <= module_names()
    assert "djangorestframework" not in module_names() and "uvicorn[standard]" not in module_names()
