"""The daemon's log: operator actions and failures (with their traceback) land in a bounded rotating file."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from protocol import Cancel, ErrorReply, Ok, Pause, Resume
from protocol.events import SweepStarted
from staminad.daemon import control, logs
from tests.helpers.inprocess import events, request, running_daemon, submit, until
from tests.helpers.sweeps import write_sweep
from tui.board import describe

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
        monkeypatch.setattr(control, "run_sweep", explode)
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


async def test_a_sweeps_start_infra_failure_and_finish_are_one_line_each(tmp_path: Path) -> None:
    """The operator's log names the sweep's start, each infra failure with its kind, and the finish."""
    state = tmp_path / "st"
    path = write_sweep(tmp_path, "ops", ["reference", "fault:crash:once"], turns=1)
    async with running_daemon(state, log_to_stderr=False), events(state, ("ops",)) as stream:
        await submit(state, path)
        await until(stream, "sweep_finished")
    lines = (state / logs.FILE).read_text().splitlines()
    assert sum("sweep ops started: 2 configurations x 1 scenarios, 0 already finished" in x for x in lines) == 1
    crash = [x for x in lines if "infra failure in sweep ops" in x]
    assert len(crash) == 1 and "WARNING" in crash[0] and "harness_crash" in crash[0] and "seed 0 turn 0" in crash[0]
    assert sum(x.endswith("sweep ops finished") for x in lines) == 1


async def test_a_first_start_is_not_resumed_and_a_start_after_a_restart_is(tmp_path: Path) -> None:
    """A submitted sweep starts unresumed (the daemon records it at submission); taken up after a restart, resumed."""
    state = tmp_path / "st"
    held = write_sweep(tmp_path, "held", ["manual"], turns=1)
    async with running_daemon(state, log_to_stderr=False), events(state, ("held",)) as stream:
        await submit(state, held)
        first = await until(stream, "sweep_started")
        await until(stream, "manual_prompt")  # scenarios recorded: the next start takes the sweep up again
    async with running_daemon(state, log_to_stderr=False), events(state, ("held",), replay=100) as stream:
        again = await until(stream, "sweep_started")
        assert isinstance(await request(state, Cancel(sweep="held")), Ok)
    assert isinstance(first.data, SweepStarted) and isinstance(again.data, SweepStarted)
    assert (first.data.resumed, again.data.resumed) == (False, True)
    lines = (state / logs.FILE).read_text().splitlines()
    assert sum("sweep held started: 1 configurations x 1 scenarios" in x for x in lines) == 1
    assert sum("sweep held started (resumed): 1 configurations x 1 scenarios" in x for x in lines) == 1
    assert describe(first, None)[0].endswith("configurations") and describe(again, None)[0].endswith("(resumed)")


async def test_logs_reads_as_text_and_ends_quietly_when_its_reader_goes(tmp_path: Path) -> None:
    """`staminad logs` prints `time sweep: what happened`, and exits 0 with nothing on stderr once its pipe closes."""
    import subprocess
    import sys

    state = tmp_path / "st"
    first = write_sweep(tmp_path, "one", ["reference"], turns=1)
    second = write_sweep(tmp_path, "two", ["reference"], seeds="0-3", turns=1)
    async with running_daemon(state, log_to_stderr=False), events(state) as stream:
        await submit(state, first)
        await until(stream, "sweep_finished")
        proc = subprocess.Popen(
            [sys.executable, "-m", "staminad.cli", "logs", "--state-dir", str(state), "--replay", "1000"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        line = await anyio.to_thread.run_sync(proc.stdout.readline)
        proc.stdout.close()  # what `| head -1` does once it has its line
        await submit(state, second)  # more events: the next write meets the closed pipe
        with anyio.fail_after(120):
            code = await anyio.to_thread.run_sync(proc.wait)
        err = proc.stderr.read().decode()
    assert re.fullmatch(r"\d\d:\d\d:\d\d one: runs on local\n", line.decode()), line
    assert code == 0 and err == "", err


@pytest.mark.docker
def test_a_sigterm_leaves_no_library_noise_on_stderr(tmp_path: Path) -> None:
    """A daemon stopped by SIGTERM mid-sweep on Docker closes its engine connections: no `Unclosed connector`."""
    import signal
    import subprocess
    import sys

    state = tmp_path / "st"
    path = write_sweep(tmp_path, "dk", ["reference"], seeds="0-1", turns=4, runtime="docker")
    cli = [sys.executable, "-m", "staminad.cli"]
    proc = subprocess.Popen([*cli, "start", "--state-dir", str(state)], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # the daemon says when it serves
            if "staminad: serving" in line:
                break
        assert subprocess.run([*cli, "submit", str(path), "--state-dir", str(state)], timeout=60).returncode == 0
        tested = [*cli, "logs", "--state-dir", str(state), "--replay", "1000", "--count", "1", "--kinds"]
        subprocess.run([*tested, "attempt_tested"], timeout=300, check=True, capture_output=True)
        proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        # A stopped daemon leaves its sweep's containers for the next start to adopt: none comes, so they go here.
        label = f"label=staminabench.sandboxes={(state / 'sandboxes' / 'dk').resolve()}"
        found = subprocess.run(["docker", "ps", "-aq", "--filter", label], capture_output=True, text=True, timeout=60)
        if found.stdout.split():
            subprocess.run(["docker", "rm", "-f", *found.stdout.split()], capture_output=True, timeout=120)
    assert "stopped" in rest and "Unclosed" not in rest and "Traceback" not in rest, rest
