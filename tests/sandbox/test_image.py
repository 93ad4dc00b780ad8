"""Base image recipes per Debian suite and harness layer tags: content-addressed, each harness on its base."""

from __future__ import annotations

import subprocess

import pytest

from staminad.agents.harnesses import HARNESSES
from staminad.agents.layers import layer_spec
from staminad.sandbox.docker.image import SUITES, ImageError, build, harness_tag, recipe

pytestmark = pytest.mark.docker


def test_each_suite_has_its_own_content_addressed_tag() -> None:
    """bookworm and trixie differ only in the suite, and that alone changes the tag; the same recipe, the same."""
    bookworm, trixie = recipe(suite="bookworm"), recipe(suite="trixie")
    assert bookworm.packages == trixie.packages and bookworm.setup == trixie.setup
    assert bookworm.tag() != trixie.tag() and recipe(suite="trixie").tag() == trixie.tag()
    assert recipe().tag() == bookworm.tag()


def test_an_unknown_suite_is_refused_in_one_line() -> None:
    """A suite with no known Python is an ImageError naming the ones there are."""
    with pytest.raises(ImageError, match="unknown Debian suite 'sid'; choose from bookworm, trixie"):
        recipe(suite="sid")


def test_wheel_tags_follow_the_base_python_and_c_library() -> None:
    """bookworm: CPython 3.11, manylinux up to glibc 2.36; trixie: 3.13, up to 2.41 (2_28 wheels fit both)."""
    python, tags = SUITES["bookworm"].python_target()
    assert python == "3.11" and "manylinux_2_36_x86_64" in tags and "manylinux_2_37_x86_64" not in tags
    python, tags = SUITES["trixie"].python_target()
    assert python == "3.13" and {"manylinux2014_x86_64", "manylinux_2_28_x86_64", "manylinux_2_41_x86_64"} <= set(tags)


def test_harnesses_needing_a_newer_python_name_trixie() -> None:
    """Mistral Vibe, OpenHands and Kimi CLI (Python >= 3.12) go on trixie; the others stay on bookworm."""
    assert {n for n, h in HARNESSES.items() if h.base == "trixie"} == {"mistral-vibe", "openhands", "kimi-cli"}
    assert all(h.base in SUITES for h in HARNESSES.values())


def test_a_harness_layer_tag_moves_with_its_base_and_pin() -> None:
    """The layer tag hashes the base recipe, the pin, the pinned dependencies and the sdists: any change, a new tag."""
    import msgspec

    codex = layer_spec("codex")
    before = harness_tag(codex)
    for changed in (
        msgspec.structs.replace(codex, base="trixie"),
        msgspec.structs.replace(codex, install="pypi:openai-codex-cli-bin==0.162.1"),
        msgspec.structs.replace(codex, deps=("litellm==1.80.0",)),
        msgspec.structs.replace(codex, sdists=("ripgrepy==2.0.0",)),
    ):
        assert harness_tag(changed) != before
    assert harness_tag(layer_spec(HARNESSES["codex"])) == before


@pytest.mark.timeout(900)
def test_the_trixie_base_builds_offline_and_runs_python_3_13() -> None:
    """mmdebstrap builds trixie the same way as bookworm, tagged by suite, with `latest` left alone."""
    latest = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", "staminabench/sandbox:latest"],
        capture_output=True,
        text=True,
    ).stdout
    tag, _ = build(suite="trixie")
    assert tag == recipe(suite="trixie").tag()
    version = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", tag, "python3", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert version.stdout.startswith("Python 3.13"), version
    after = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", "staminabench/sandbox:latest"],
        capture_output=True,
        text=True,
    ).stdout
    assert after == latest
