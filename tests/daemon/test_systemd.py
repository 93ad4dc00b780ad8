"""The systemd side: the unit file verifies, and the daemon reports READY over NOTIFY_SOCKET."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.sweep

UNIT = Path(__file__).parents[2] / "systemd" / "staminad.service"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here")
def test_unit_file_verifies(tmp_path: Path) -> None:
    """`systemd-analyze verify` accepts the unit (ExecStart pointed at this checkout's staminad)."""
    exe = Path(sys.executable).with_name("staminad")
    unit = tmp_path / "staminad.service"
    unit.write_text(UNIT.read_text().replace("/opt/staminabench/.venv/bin/staminad", str(exe)))
    done = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    problems = [line for line in done.stderr.splitlines() if "staminad.service" in line]
    assert done.returncode == 0 and not problems, done.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here")
def test_unit_runs_as_its_own_user_with_a_low_exposure(tmp_path: Path) -> None:
    """`systemd-analyze security --offline` finds a static non-root user, no capabilities, and rates it at most 3.0."""
    exe = Path(sys.executable).with_name("staminad")
    unit = tmp_path / "staminad.service"
    unit.write_text(UNIT.read_text().replace("/opt/staminabench/.venv/bin/staminad", str(exe)))
    done = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", "--threshold=30", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    passed = {line.split()[1] for line in report.splitlines() if line.startswith("✓")}
    assert {"User=/DynamicUser=", "CapabilityBoundingSet=~CAP_SYS_ADMIN", "NoNewPrivileges="} <= passed, report


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here")
def test_unit_lets_the_daemon_reach_the_gpus_and_no_other_hardware(tmp_path: Path) -> None:
    """No private /dev (it hides /dev/nvidia*): a closed device policy allowing the NVIDIA devices NVML opens."""
    exe = Path(sys.executable).with_name("staminad")
    unit = tmp_path / "staminad.service"
    unit.write_text(UNIT.read_text().replace("/opt/staminabench/.venv/bin/staminad", str(exe)))
    done = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = {line.split()[1]: line for line in done.stdout.splitlines() if line[:1] and line[0] in "✓✗"}
    settings = [line.strip() for line in UNIT.read_text().splitlines() if not line.startswith("#")]
    assert "PrivateDevices=no" in settings and "DevicePolicy=closed" in settings, settings
    assert {"DeviceAllow=char-nvidia-frontend rw", "DeviceAllow=char-nvidia-caps r"} <= set(settings)
    acl = lines["DeviceAllow="]  # the ACL systemd computed: the pseudo devices' closed set, and the NVIDIA ones
    assert "char-nvidia-frontend:rw" in acl and "char-nvidia-caps:r" in acl and "block-" not in acl, acl
    assert all(lines[f"CapabilityBoundingSet=~CAP_{c}"].startswith("✓") for c in ("MKNOD", "SYS_RAWIO"))
    assert lines["SystemCallFilter=~@raw-io"].startswith("✓"), lines["SystemCallFilter=~@raw-io"]


def test_daemon_notifies_systemd_when_ready(tmp_path: Path) -> None:
    """With NOTIFY_SOCKET set (Type=notify), the daemon sends READY=1 once its socket serves."""
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify"))
    notify.settimeout(30)
    env = {**os.environ, "NOTIFY_SOCKET": str(tmp_path / "notify")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "staminad.cli", "start", "--state-dir", str(tmp_path / "st")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert notify.recv(100) == b"READY=1"
        assert (tmp_path / "st" / "staminad.sock").exists()
        proc.send_signal(signal.SIGTERM)
        assert notify.recv(100) == b"STOPPING=1"
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        notify.close()


def test_metrics_endpoint_counts_attempts(tmp_path: Path) -> None:
    """With --metrics-port, /metrics on 127.0.0.1 exposes attempts, turns and infra failures of a sweep."""
    import time

    import httpx

    from tests.helpers import free_port
    from tests.helpers.sweeps import write_sweep

    port = free_port()
    state = tmp_path / "st"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "staminad.cli",
            "start",
            "--state-dir",
            str(state),
            "--runtime",
            "local",
            "--metrics-port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        path = write_sweep(tmp_path, "met", ["reference", "fault:crash:once"], turns=1)
        deadline = time.monotonic() + 60
        while (
            subprocess.run(
                [sys.executable, "-m", "staminad.cli", "submit", str(path), "--state-dir", str(state)],
                capture_output=True,
            ).returncode
            != 0
        ):
            assert time.monotonic() < deadline
            time.sleep(0.1)  # the daemon is still starting in another process
        text = ""
        while time.monotonic() < deadline:
            text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            done = [x for x in text.splitlines() if x.startswith("staminad_scenarios{") and 'status="done"' in x]
            if len(done) == 2 and all(x.endswith(" 1.0") for x in done):
                break
            time.sleep(0.2)  # polling another process's progress
        lines = text.splitlines()
        passed = [x for x in lines if x.startswith("staminad_attempts_total{") and 'outcome="pass"' in x]
        assert sum(float(x.rpartition(" ")[2]) for x in passed) == 4
        assert any(x.startswith("staminad_infra_failures_total{") and 'kind="harness_crash"' in x for x in lines)
        suites = [x for x in lines if x.startswith("staminad_suite_seconds_count{")]
        assert sum(float(x.rpartition(" ")[2]) for x in suites) == 4
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
