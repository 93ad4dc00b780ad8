"""Staging an agent layer: exactly its files, updated in place so a running container's mount stays valid."""

from __future__ import annotations

from pathlib import Path

from staminad.agents.base import adapter_for
from staminad.sandbox.docker import HARNESS_DIR, stage_layer


def test_restaging_keeps_the_directory_and_drops_what_the_layer_lacks(tmp_path: Path) -> None:
    """A reference layer restaged as a manual one: same directory inode, only the runtime's scripts left."""
    dest = tmp_path / "layer"
    stage_layer(dest, adapter_for("reference").layer())
    inode = dest.stat().st_ino
    assert (dest / "reference" / "agent.py").read_bytes() == (HARNESS_DIR / "reference" / "agent.py").read_bytes()
    (dest / "stray").mkdir()
    (dest / "stray" / "x.py").write_text("left by someone")
    (dest / "sandbox" / "wrapper.sh").write_text("tampered")
    stage_layer(dest, adapter_for("manual").layer())
    assert dest.stat().st_ino == inode
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*")) == [
        "sandbox",
        "sandbox/launcher.py",
        "sandbox/listening.py",
        "sandbox/logcap.py",
        "sandbox/pgroups.py",
        "sandbox/quota.py",
        "sandbox/server.sh",
        "sandbox/wrapper.sh",
    ]
    assert (dest / "sandbox" / "wrapper.sh").read_bytes() == (HARNESS_DIR / "sandbox" / "wrapper.sh").read_bytes()
