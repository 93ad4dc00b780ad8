"""The viewer's /ops page: the box with no daemon (and no NVML), and a live daemon's sweeps, slots and history."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import httpx
import pytest

from protocol import GetOps, OpsReport
from staminad.host.box import gpus
from staminad.host.sample import sample_box
from staminad.viewer.app import create_app
from tests.helpers.inprocess import events, request, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_without_nvml_the_gpu_panel_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With `pynvml` not importable, no GPU is listed and the sample says NVML is missing."""
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` now raises ImportError
    found = gpus()
    assert not found.available and found.devices == () and found.reason.startswith("no NVML")
    box = sample_box({"state": tmp_path})
    assert box.gpus == () and box.gpu_note.startswith("no NVML")
    assert box.memory_total > box.memory_available > 0 and box.cpus >= 1
    assert [d.role for d in box.disks] == ["state"] and 0 < box.disks[0].free <= box.disks[0].total


@pytest.mark.anyio
async def test_ops_page_without_a_daemon_shows_the_box_and_why(tmp_path: Path) -> None:
    """No daemon on the state dir: the page says so and still shows load, memory, the state disk and GPUs."""
    transport = httpx.ASGITransport(app=create_app(tmp_path))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        r = await client.get("/ops")
    text = _text(r.text)
    assert r.status_code == 200
    assert "No daemon answered (staminad is not running" in text
    assert re.search(r"load [\d.]+ [\d.]+ [\d.]+ on \d+ CPUs", text)
    assert re.search(r"memory [\d.]+ \S+ used of [\d.]+ \S+", text)
    assert f"state disk {tmp_path}:" in text
    assert 'id="ops-gpu-note"' in r.text or 'id="ops-gpus"' in r.text


@pytest.mark.anyio
@pytest.mark.sweep
async def test_ops_page_shows_a_live_sweep_its_slots_and_history(tmp_path: Path) -> None:
    """A daemon running a sweep: /ops lists it with progress and slots, the daemon's slots, and sparklines."""
    path = write_sweep(tmp_path, "opsweep", ["manual"], seeds="0-2", turns=1)
    path.write_text(path.read_text().replace("parallel = 4", "parallel = 2"))
    state = tmp_path / "st"
    async with running_daemon(state, max_parallel=8), events(state, ("opsweep",)) as stream:
        await submit(state, path)
        await until(stream, "manual_prompt")
        ops = await request(state, GetOps(history=10))
        assert isinstance(ops, OpsReport)
        assert [(s.sweep, s.status, s.scenarios, s.parallel, s.queued) for s in ops.sweeps] == [
            ("opsweep", "running", 3, 2, 1)
        ]
        assert ops.limit == 8 and ops.in_use == 2 and ops.stall == ""
        assert 1 <= len(ops.history) <= 10 and ops.box.disks[0].role == "state"
        transport = httpx.ASGITransport(app=create_app(state))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            r = await client.get("/ops")
    text = _text(r.text)
    assert r.status_code == 200 and "No daemon answered" not in text
    assert re.search(r"opsweep running 0 of 3 2/2 1 -", text), text
    assert "2 of 8 daemon-wide scenario slots in use" in text
    assert r.text.count('<svg xmlns="http://www.w3.org/2000/svg" class="spark"') >= 4
    assert "No model calls recorded." in text
