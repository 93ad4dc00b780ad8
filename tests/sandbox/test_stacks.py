"""The web stacks are part of the image's recipe: installed by its hooks, named by its hash, fetched as locked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from staminad.bench.environment import NODE_PACKAGES, WHEELHOUSE
from staminad.sandbox.docker import stacks
from staminad.sandbox.docker.recipe import SUITES, recipe, wheel_target


def test_every_layer_installs_the_stacks_and_pip_and_the_node_layer_express() -> None:
    """Each layer's recipe holds pip, venv and the stacks' hooks; the node layer adds Debian's Express."""
    for layer in ("base", "node", "rust"):
        r = recipe(layer)
        assert {"python3-pip", "python3-venv", "python-is-python3"} <= set(r.packages)
        assert r.setup[-len(stacks.HOOKS) :] == stacks.HOOKS and r.stacks == stacks.digest()
    assert {package for package, _, _ in NODE_PACKAGES} <= set(recipe("node").packages)
    assert "node-express" not in recipe("base").packages


def test_the_hooks_install_offline_and_point_every_pip_at_the_wheelhouse() -> None:
    """pip.conf has no index and the wheelhouse; the install runs without the host's PIP_* variables."""
    copy, conf, install = stacks.HOOKS
    assert f'"$1{WHEELHOUSE}"' in copy and "go-w" in copy
    assert "no-index = true" in conf and f"find-links = {WHEELHOUSE}" in conf and "/etc/pip.conf" in conf
    assert "env -i" in install and "--no-index" in install and f"{WHEELHOUSE}/requirements.txt" in install


def test_a_changed_lock_is_a_new_image_tag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One pin moved in the lock changes the recipe's hash, so the old image is never found under the new tag."""
    before = recipe().tag()
    lock = json.loads(stacks.LOCK.read_text())
    lock["pins"] = [p if not p.startswith("werkzeug==") else "werkzeug==0.0.1" for p in lock["pins"]]
    moved = tmp_path / "stacks.json"
    moved.write_text(json.dumps(lock))
    monkeypatch.setattr(stacks, "LOCK", moved)
    assert recipe().tag() != before


def test_the_wheel_target_follows_the_base() -> None:
    """Wheels are binary only, for the base's CPython and manylinux up to its glibc."""
    target = wheel_target(SUITES["trixie"])
    assert target[:2] == ["--python-version", "3.13"] and "--only-binary=:all:" in target
    assert "--platform=manylinux_2_41_x86_64" in target and "--platform=manylinux_2_42_x86_64" not in target
