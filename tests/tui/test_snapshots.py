"""SVG snapshots of every screen, against a real daemon serving a finished, deterministic sweep.

The sweep is run once per module with fast deterministic agents; the wall-clock columns of its
store and the sandbox paths are then fixed, so only a change to the monitor (or its pinned Textual)
moves a snapshot.
Update after an intended change with `./sb test tests/tui --snapshot-update` and review the SVGs.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from textual.pilot import Pilot

from protocol import Event
from protocol.events import AttemptStarted, AttemptTested, EventData, InfraFailure, ScenarioFinished
from tests.helpers.daemon import daemon
from tests.helpers.sweeps import sweep as run_in_process
from tests.helpers.sweeps import write_sweep
from tests.helpers.tui import settle
from tui.app import StaminaApp, make_app

pytestmark = pytest.mark.sweep

SIZE = (150, 40)
AT = 1_790_000_000.0  # a fixed moment for every timestamp the screens show


@pytest.fixture(scope="module")
def socket_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    os.environ["TZ"] = "UTC"
    time.tzset()
    tmp = tmp_path_factory.mktemp("snap")
    path = write_sweep(tmp, "snap", ["reference", "mutant:accept-null", "fault:self-kill:once"], seeds="0-1", turns=2)
    path.write_text(path.read_text().replace("infra_retries = 2", "infra_retries = 0"))
    state = tmp / "st"
    anyio.run(run_in_process, path, state)
    db = sqlite3.connect(state / "staminad.db")
    db.execute(
        "UPDATE attempts SET launched_at = ?, finished_at = ?, harness_seconds = 1.25, suite_seconds = 0.5, "
        "server_seconds = 0.25, teardown_seconds = 0.05, marker_latency = 0.001",
        (AT, AT + 2),
    )
    db.execute("UPDATE sweeps SET created_at = ?", (AT,))
    db.execute("UPDATE scenarios SET updated_at = ?", (AT,))
    db.execute("UPDATE infra_events SET at = ?", (AT,))
    # The sandboxes live under pytest's numbered tmp dir: shown paths are fixed (and their logs then read as empty).
    db.execute("UPDATE scenarios SET sandbox = json_set(sandbox, '$.root', '/var/lib/staminabench/snap/' || id)")
    db.commit()
    db.close()
    with daemon(state):
        yield state / "staminad.sock"


def _run_before(*steps: Callable[[StaminaApp, Pilot[None]], Awaitable[None]]) -> Callable[[Pilot[None]], Any]:
    async def run(pilot: Pilot[None]) -> None:
        app: StaminaApp = pilot.app  # type: ignore[assignment]
        await settle(pilot, lambda: app.connected and "snap" in app.board.scenarios and bool(app.board.sweeps))
        await pilot.pause()
        for step in steps:
            await step(app, pilot)
        await pilot.pause()

    return run


async def _press(app: StaminaApp, pilot: Pilot[None], *keys: str) -> None:
    await pilot.press(*keys)
    await pilot.pause()


def test_overview(snap_compare: Any, socket_path: Path) -> None:
    """The overview: the sweep's row (state, ETA, totals) and its configurations under it, with their figures."""
    assert snap_compare(make_app(socket_path), terminal_size=SIZE, run_before=_run_before())


def test_sweep_view(snap_compare: Any, socket_path: Path) -> None:
    """The sweep view sorted trouble-first: phases, attempts of R+1, failures and turn histories."""

    async def open_sweep(app: StaminaApp, pilot: Pilot[None]) -> None:
        await _press(app, pilot, "enter", "s", "s")

    assert snap_compare(make_app(socket_path), terminal_size=SIZE, run_before=_run_before(open_sweep))


def test_sweep_view_at_100x30(snap_compare: Any, socket_path: Path) -> None:
    """On a 100x30 terminal the sweep view keeps configuration, seed, phase, last failure and history."""

    async def open_sweep(app: StaminaApp, pilot: Pilot[None]) -> None:
        await _press(app, pilot, "enter")

    assert snap_compare(make_app(socket_path), terminal_size=(100, 30), run_before=_run_before(open_sweep))


def test_scenario_detail(snap_compare: Any, socket_path: Path) -> None:
    """A failed scenario's timeline and its last attempt's prompt, feedback and failing tests."""

    async def open_failed(app: StaminaApp, pilot: Pilot[None]) -> None:
        await _press(app, pilot, "enter", "slash", *"accept", "enter", "enter")
        screen: Any = app.screen
        await settle(pilot, lambda: getattr(screen, "_shown_attempt", None) is not None)

    assert snap_compare(make_app(socket_path), terminal_size=SIZE, run_before=_run_before(open_failed))


def test_event_log_with_infra_failures(snap_compare: Any, socket_path: Path) -> None:
    """The event log: infra failures (self-kill, hang) stand out from passes and failures."""

    async def log(app: StaminaApp, pilot: Pilot[None]) -> None:
        ids = sorted(app.board.scenarios["snap"])

        def who(i: int) -> dict[str, Any]:
            row = app.board.scenarios["snap"][ids[i]]
            return {"scenario": row.id, "configuration": row.configuration, "seed": row.seed}

        samples: list[EventData] = [
            AttemptStarted(**who(0), turn=0, attempt=1, infra_try=0),
            AttemptTested(
                **who(0),
                turn=0,
                attempt=1,
                passed=True,
                tests=131,
                failed_tests=0,
                categories=(),
                suite_seconds=0.1,
                server_seconds=0.1,
            ),
            AttemptTested(
                **who(2),
                turn=1,
                attempt=2,
                passed=False,
                tests=124,
                failed_tests=3,
                categories=("validation",),
                suite_seconds=0.1,
                server_seconds=0.1,
            ),
            InfraFailure(
                **who(4), turn=0, attempt=1, infra_try=0, infra_kind="self_kill", detail="harness exit None, signal 15"
            ),
            InfraFailure(
                **who(5),
                turn=3,
                attempt=1,
                infra_try=1,
                infra_kind="stuck",
                detail="no marker within the turn timeout of 600 s",
            ),
            ScenarioFinished(
                **who(4), status="infra_failed", turns_passed=0, reason="self_kill on turn 0, 0 infra retries used"
            ),
        ]
        for i, data in enumerate(samples):
            app._on_event(Event(sweep="snap", data=data, at=AT + i, seq=10_000 + i))
        await _press(app, pilot, "e")

    assert snap_compare(make_app(socket_path), terminal_size=SIZE, run_before=_run_before(log))


def test_confirmation_and_help_dialogs(snap_compare: Any, socket_path: Path) -> None:
    """Cancelling asks first; the dialog names the sweep and what cancelling does."""

    async def ask(app: StaminaApp, pilot: Pilot[None]) -> None:
        await _press(app, pilot, "c")

    assert snap_compare(make_app(socket_path), terminal_size=SIZE, run_before=_run_before(ask))


def test_help(snap_compare: Any, socket_path: Path) -> None:
    """`?` lists the screen's key bindings."""

    async def helped(app: StaminaApp, pilot: Pilot[None]) -> None:
        await _press(app, pilot, "enter", "question_mark")

    assert snap_compare(make_app(socket_path), terminal_size=SIZE, run_before=_run_before(helped))


def test_daemon_not_running(snap_compare: Any, tmp_path: Path) -> None:
    """Without a daemon the monitor says so plainly and how to start one."""

    async def down(pilot: Pilot[None]) -> None:
        app: StaminaApp = pilot.app  # type: ignore[assignment]
        await settle(pilot, lambda: "not running" in app.status_text)
        await pilot.pause()

    app = make_app(Path("/nonexistent/staminabench/staminad.sock"))
    assert snap_compare(app, terminal_size=SIZE, run_before=down)


def test_box_screen(snap_compare: Any, socket_path: Path) -> None:
    """`b` opens the box screen with sweeps, slots, endpoints, load, memory, disks, GPUs and sparklines."""
    # One fixed report is shown, since the machine's figures move; the live fetch is pinned in tests/tui/test_box.py.
    from protocol import OpsReport
    from protocol.messages import BoxSample, DiskUsage, GpuInfo, OpsEndpoint, OpsPoint, OpsSweep
    from tui.screens.box import BoxScreen

    points = tuple(
        OpsPoint(
            at=AT + 10 * i, load=1 + (i % 7) / 2, memory_used=0.3 + i / 100, state_free=(40 - i) << 30, active=i % 5
        )
        for i in range(30)
    )
    fixed = OpsReport(
        at=AT + 300,
        sweeps=(
            OpsSweep(sweep="snap", status="finished", finished=6, scenarios=6, active=0, queued=0, parallel=4, eta=0),
            OpsSweep(
                sweep="big",
                status="paused",
                finished=12,
                scenarios=100_000,
                active=4,
                queued=96,
                parallel=4,
                eta=7300,
                reason="state disk full: /st has 0 B free",
                expanding=4096,
                expand_total=100_000,
            ),
        ),
        engines=(),
        limit=64,
        in_use=4,
        endpoints=(
            OpsEndpoint(sweep="big", model="qwen3-coder", calls=420, errors=3, latency=1.75, spend=2.5, cap=10),
        ),
        box=BoxSample(
            at=AT + 300,
            load=(3.5, 2.25, 1.0),
            cpus=16,
            memory_total=64 << 30,
            memory_available=40 << 30,
            disks=(DiskUsage(role="state", path="/var/lib/staminabench", total=100 << 30, free=10 << 30),),
            gpus=(
                GpuInfo(
                    index=0,
                    name="H200",
                    util=87,
                    memory_used=120 << 30,
                    memory_total=141 << 30,
                    processes=("4242 vllm (122880 MiB)",),
                ),
            ),
        ),
        history=points,
        sample_every=10,
        stall="state disk full: /st has 0 B free; writes to the store wait",
    )

    async def box(app: StaminaApp, pilot: Pilot[None]) -> None:
        await _press(app, pilot, "b")
        screen = app.screen
        assert isinstance(screen, BoxScreen)
        await settle(pilot, lambda: screen.report is not None)  # the live report came once
        screen.frozen = True
        screen.show(fixed)
        await pilot.pause()

    assert snap_compare(make_app(socket_path), terminal_size=SIZE, run_before=_run_before(box))
