"""Staging an agent layer: exactly its files, updated in place so a running container's mount stays valid."""

from __future__ import annotations

from pathlib import Path

from staminad.agents.base import adapter_for
from staminad.sandbox.docker.bindsandbox import HARNESS_DIR, stage_layer


def test_restaging_keeps_the_directory_and_drops_what_the_layer_lacks(tmp_path: Path) -> None:
    """A reference layer restaged as a manual one: same directory inode, only the runtime's scripts left."""
    dest = tmp_path / "layer"
    stage_layer(dest, adapter_for("reference").layer())
    inode = dest.stat().st_ino
    assert (dest / "reference" / "agent.py").read_bytes() == (HARNESS_DIR / "reference" / "agent.py").read_bytes()
    (dest / "stray").mkdir()
    (dest / "stray" / "x.py").write_text("left by someone")
    wrapper = Path("sandbox", "inside", "wrapper.sh")
    (dest / wrapper).write_text("tampered")
    stage_layer(dest, adapter_for("manual").layer())
    assert dest.stat().st_ino == inode
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*")) == [
        "sandbox",
        "sandbox/inside",
        "sandbox/inside/launcher.py",
        "sandbox/inside/listening.py",
        "sandbox/inside/logcap.py",
        "sandbox/inside/pgroups.py",
        "sandbox/inside/quota.py",
        "sandbox/inside/server.sh",
        "sandbox/inside/wrapper.sh",
    ]
    assert (dest / wrapper).read_bytes() == (HARNESS_DIR / wrapper).read_bytes()
