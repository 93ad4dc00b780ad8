"""The box screen's text says which engine is down and for how long, and lists orphaned sandboxes with why."""

from __future__ import annotations

from protocol import EngineInfo, OpsReport, SandboxInfo
from protocol.replies import BoxSample
from tui.screens.box import report_text

AT = 1_700_000_000.0


def test_an_engine_outage_and_orphaned_sandboxes_are_on_the_box_screen() -> None:
    """A down engine shows since when and how many scenarios wait; each orphan shows its engine and why."""
    report = OpsReport(
        at=AT,
        sweeps=(),
        engines=(
            EngineInfo(
                url="unix:///var/run/docker.sock",
                slots=0,
                used=0,
                healthy=False,
                detail="/_ping: ClientConnectorError",
                down_since=AT - 125,
                waiting=3,
            ),
        ),
        limit=8,
        in_use=3,
        endpoints=(),
        box=BoxSample(at=AT, load=(0.5, 0.5, 0.5), cpus=2, memory_total=1 << 30, memory_available=1 << 29),
        orphans=(
            SandboxInfo(
                engine="unix:///var/run/docker.sock",
                kind="container",
                name="staminabench-lost-c1-s0-0123456789",
                running=True,
                orphan="its state directory /tmp/gone is gone",
            ),
        ),
    )
    text = report_text(report)
    assert (
        "unix:///var/run/docker.sock: [b red]not answering[/b red] /_ping: ClientConnectorError, [b red]down for"
        in text
    )
    assert (
        "3 scenarios paused until it answers" in text and "slots" not in text.split("[b]engines[/b]")[1].split("\n")[1]
    )
    assert "orphaned sandboxes[/b red]  (1; `staminad sandboxes --prune` removes them)" in text
    assert "container staminabench-lost-c1-s0-0123456789 (running) on unix:///var/run/docker.sock: its state" in text
