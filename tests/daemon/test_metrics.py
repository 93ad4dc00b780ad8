"""The metrics tell the truth: gauges read from the scheduler and the store at scrape time, the box as it is."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

import httpx
import pytest

from protocol import Cancel, EngineInfo, Ok
from staminad.daemon.logs import EngineHealth
from staminad.host import box
from tests.helpers import free_port
from tests.helpers.inprocess import events, request, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


class Scrape(dict[tuple[str, frozenset[tuple[str, str]]], float]):
    """One scrape's samples by name and label set, whatever order the labels came in."""

    def __call__(self, name: str, **labels: str) -> float:
        return self[(name, frozenset(labels.items()))]

    def names(self) -> set[str]:
        return {name for name, _ in self}


async def scrape(port: int) -> Scrape:
    async with httpx.AsyncClient() as client:
        text = (await client.get(f"http://127.0.0.1:{port}/metrics", timeout=60)).text
    out = Scrape()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            name, _, rest = key.partition("{")
            labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', rest))
            out[(name, labels)] = float(value)
    return out


async def test_running_and_pending_scenarios_are_read_not_counted_and_a_cancel_leaves_nothing_high(
    tmp_path: Path,
) -> None:
    """Three scenarios held by a manual agent read 3 running; after a cancel no sweep reads any running."""
    state, port = tmp_path / "st", free_port()
    path = write_sweep(tmp_path, "held", ["manual"], seeds="0-2", turns=1)
    async with running_daemon(state, metrics_port=port, log_to_stderr=False), events(state, ("held",)) as stream:
        await submit(state, path)
        for _ in range(3):
            await until(stream, "manual_prompt")
        seen = await scrape(port)
        assert seen("staminad_active_scenarios", sweep="held") == 3
        assert seen("staminad_queued_scenarios", sweep="held") == 0
        assert seen("staminad_sweep_parallel", sweep="held") == 4
        config = {"sweep": "held", "configuration": "manual R=2 detailed", "model": "none"}
        assert seen("staminad_scenarios", **config, status="running") == 3
        assert seen("staminad_sweep_status", status="running", sweep="held") == 1
        assert isinstance(await request(state, Cancel(sweep="held")), Ok)
        after = await scrape(port)
    assert "staminad_active_scenarios" not in after.names()  # no running sweep, nothing held
    assert after("staminad_slots_in_use") == 0
    assert after("staminad_scenarios", **config, status="pending") == 3
    assert after("staminad_sweep_status", status="cancelled", sweep="held") == 1


async def test_attempts_infra_failures_turns_and_durations_come_from_recorded_rows(tmp_path: Path) -> None:
    """A finished sweep's attempts, turns, infra failures and duration histograms match what the store holds."""
    state, port = tmp_path / "st", free_port()
    path = write_sweep(tmp_path, "met", ["reference", "fault:crash:once"], turns=1)
    async with running_daemon(state, metrics_port=port, log_to_stderr=False), events(state, ("met",)) as stream:
        await submit(state, path)
        await until(stream, "sweep_finished")
        seen = await scrape(port)
    crash = {"sweep": "met", "configuration": "fault:crash:once R=2 detailed", "model": "none"}
    ref = {"sweep": "met", "configuration": "reference R=2 detailed", "model": "none"}
    assert seen("staminad_attempts_total", **ref, outcome="pass") == 2
    assert seen("staminad_attempts_total", **crash, outcome="infra") == 1
    assert seen("staminad_infra_failures_total", **crash, kind="harness_crash") == 1
    assert seen("staminad_turns_passed_total", **ref) == 2
    assert seen("staminad_suite_seconds_count", **ref) == 2
    assert seen("staminad_harness_seconds_count", **crash) == 3  # the crashed attempt ran its harness too
    assert seen("staminad_suite_seconds_bucket", **ref, le="+Inf") == 2
    assert seen("staminad_llm_spend_dollars", sweep="met") == 0
    assert seen("staminad_last_attempt_finished_timestamp_seconds", sweep="met") > 0
    assert seen("staminad_store_readable") == 1
    assert seen("staminad_disk_free_bytes", disk="state", path=str(state)) > 0
    assert seen("staminad_memory_total_bytes") > 0


def test_a_box_without_nvml_says_there_are_no_gpus_and_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """With nvidia-ml-py not importable the snapshot reports GPUs unavailable, naming the package, and no devices."""
    monkeypatch.setitem(sys.modules, "pynvml", None)  # what an import of an absent package meets
    snapshot = box.box_snapshot({"here": Path.cwd(), "gone": Path("/nonexistent/dir")})
    assert not snapshot.gpus.available and snapshot.gpus.devices == ()
    assert "nvidia-ml-py is not installed" in snapshot.gpus.reason
    assert [d.name for d in snapshot.disks] == ["here"]  # a directory that is not there is left out
    assert snapshot.memory_total_bytes >= snapshot.memory_available_bytes > 0 and len(snapshot.load) == 3


def test_an_engines_health_change_is_logged_once_each_way(caplog: pytest.LogCaptureFixture) -> None:
    """An engine that stops answering gets one warning, its return one line; steady states log nothing."""
    health = EngineHealth()
    up = EngineInfo(url="tcp://a:2375", slots=4, used=0, healthy=True)
    down = EngineInfo(url="tcp://a:2375", slots=4, used=0, healthy=False, detail="ping timed out")
    with caplog.at_level(logging.INFO, logger="staminad"):
        for seen in (up, up, down, down, up, up):
            health.look([seen])
    assert [r.getMessage() for r in caplog.records] == [
        "engine tcp://a:2375 is not answering: ping timed out",
        "engine tcp://a:2375 is healthy again",
    ]
