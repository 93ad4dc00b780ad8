"""The shipped dashboard and alert rules: every panel says what its series are (a legend naming each one apart)
and in what unit, and every alert is shown able to fire by `promtool test rules` (ops/prometheus/alerts_test.yml)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

OPS = Path(__file__).resolve().parents[2] / "ops"


def _panels() -> list[dict[str, Any]]:
    dash = json.loads((OPS / "grafana" / "staminabench.json").read_text())
    return [p for p in dash["panels"] if p["type"] != "row"]


def test_every_panel_has_a_unit_and_a_legend_naming_each_series_apart() -> None:
    """A unit on every panel; a legend format on every query, distinct within the panel; time series show it."""
    for p in _panels():
        title = p["title"]
        assert p.get("fieldConfig", {}).get("defaults", {}).get("unit"), f"{title}: no unit"
        formats = [t.get("legendFormat", "") for t in p["targets"]]
        assert all(formats) and len(set(formats)) == len(formats), f"{title}: legends {formats}"
        if p["type"] == "timeseries":
            assert p["options"]["legend"]["showLegend"] is True, title
    ids = [p["id"] for p in _panels()]
    assert len(ids) == len(set(ids))


def test_every_alert_has_a_rule_test_that_sees_it_fire() -> None:
    """Each alert of alerts.yml is expected to fire (non-empty exp_alerts) somewhere in alerts_test.yml."""
    rules = yaml.safe_load((OPS / "prometheus" / "alerts.yml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    tests = yaml.safe_load((OPS / "prometheus" / "alerts_test.yml").read_text())
    fired = {c["alertname"] for t in tests["tests"] for c in t["alert_rule_test"] if c["exp_alerts"]}
    assert alerts == fired, f"alerts never shown firing: {sorted(alerts - fired)}"


@pytest.mark.skipif(
    shutil.which("promtool") is None,
    reason="promtool is not installed: `./sb test` installs Debian's prometheus (apt-get install prometheus)",
)
def test_promtool_sees_every_alert_fire_on_its_series() -> None:
    """`promtool test rules` passes: each alert fires on the series that should raise it, not before its `for`."""
    done = subprocess.run(
        ["promtool", "test", "rules", "alerts_test.yml"],
        cwd=OPS / "prometheus",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.anyio
async def test_metrics_listen_on_the_address_given_for_a_prometheus_elsewhere(tmp_path: Path) -> None:
    """`--metrics-host` moves the listener off loopback-only 127.0.0.1 (here to 127.0.0.2); a name is refused."""
    from types import SimpleNamespace

    import httpx

    from staminad.cli import main
    from staminad.daemon.metrics import Metrics
    from tests.helpers import free_port

    metrics = Metrics(SimpleNamespace(state_dir=tmp_path))  # serve reads no other part
    port = free_port()
    metrics.serve(port, "127.0.0.2")
    assert metrics.http is not None
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            with pytest.raises(httpx.ConnectError):
                await client.get(f"http://127.0.0.1:{port}/metrics")
            served = await client.get(f"http://127.0.0.2:{port}/metrics")
    finally:
        metrics.http[0].shutdown()
        metrics.http[0].server_close()
    assert served.status_code == 200
    with pytest.raises(SystemExit) as refused:  # a usage error: one line, status 2
        main(["start", "--state-dir", str(tmp_path / "st"), "--metrics-port", "9", "--metrics-host", "box"])
    assert refused.value.code == 2
