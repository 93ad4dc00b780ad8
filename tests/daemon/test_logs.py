"""The daemon's log: operator actions and failures (with their traceback) land in a bounded rotating file."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import Cancel, ErrorReply, Ok, Pause, Resume
from staminad.daemon import logs, service
from tests.helpers.inprocess import events, request, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


async def test_submit_pause_resume_cancel_and_a_failed_sweep_are_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each operator action is one line of staminad.log; a sweep that fails leaves its traceback there."""
    state = tmp_path / "st"
    held = write_sweep(tmp_path, "held", ["manual"], turns=1)
    broken = write_sweep(tmp_path, "broken", ["reference"], turns=1)
    async with running_daemon(state, log_to_stderr=False) as daemon, events(state, ("held", "broken")) as stream:
        await submit(state, held)
        await until(stream, "manual_prompt")
        assert isinstance(await request(state, Pause(sweep="held")), Ok)
        assert isinstance(await request(state, Resume(sweep="held")), Ok)
        assert isinstance(await request(state, Cancel(sweep="held")), Ok)
        assert isinstance(await request(state, Cancel(sweep="held")), ErrorReply)  # refused: logged, one line

        async def explode(*_: object) -> None:
            raise RuntimeError("the engine broke")

        # A bug in the engine cannot be provoked from outside; stand one in so the daemon meets it.
        monkeypatch.setattr(service, "run_sweep", explode)
        await submit(state, broken)
        failed = await until(stream, "sweep_error")
        assert failed.sweep == "broken" and daemon.running.get("held") is None
    text = (state / logs.FILE).read_text()
    for line in (
        "submitted sweep held from",
        "paused sweep held",
        "resumed sweep held",
        "cancelling sweep held",
        "request Cancel refused: sweep held is not running",
        "submitted sweep broken",
        "sweep broken failed",
        "stop requested",
    ):
        assert line in text, line
    assert "Traceback (most recent call last)" in text and "RuntimeError: the engine broke" in text


def test_the_log_file_rotates_within_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """However much is logged, the file and its backups stay within MAX_BYTES each and BACKUPS in number."""
    monkeypatch.setattr(logs, "MAX_BYTES", 2000)
    monkeypatch.setattr(logs, "BACKUPS", 2)
    with logs.daemon_logging(tmp_path, stderr=False) as path:
        for i in range(500):
            logs.log.info("line %d of a long day", i)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["staminad.log", "staminad.log.1", "staminad.log.2"]
    assert all((tmp_path / f).stat().st_size <= 2000 for f in files)
    assert "line 499 of a long day" in path.read_text()
    assert not logs.log.handlers  # nothing left attached once the daemon is gone
