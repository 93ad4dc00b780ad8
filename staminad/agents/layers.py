"""A harness's image layer as the sandbox builds it: its record's `Layer`, handed down as a `LayerSpec`.

The harness records (`staminad.agents.harnesses`) stay standard library only, for the launcher inside the
sandbox; this is where they meet the image build (`staminad.sandbox.docker.image`), which knows no harness by name.
"""

from __future__ import annotations

from staminad.agents.harnesses import HARNESS_ROOT, HARNESSES, Harness
from staminad.sandbox.docker.image import ImageError, LayerSpec, harness_tag


def layer_spec(harness: str | Harness) -> LayerSpec:
    """The layer of a harness (by name, or its record); an unknown name is an ImageError naming the known."""
    if isinstance(harness, str):
        if harness not in HARNESSES:
            raise ImageError(f"unknown harness {harness!r}; choose from {', '.join(HARNESSES)}")
        harness = HARNESSES[harness]
    layer = harness.layer
    return LayerSpec(
        name=harness.name,
        install=layer.install,
        root=HARNESS_ROOT,
        base=layer.base,
        deps=layer.deps,
        bins=layer.bins,
        sdists=layer.sdists,
        carry=layer.carry,
        ceiling=layer.ceiling,
    )


def layer_tag(harness: str | Harness) -> str:
    """The content-addressed tag of the harness's layer (`staminad.sandbox.docker.image.harness_tag`)."""
    return harness_tag(layer_spec(harness))
