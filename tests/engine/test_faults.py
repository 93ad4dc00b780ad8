"""Blame on the right side (local runtime): broken servers are the agent's, harness faults are retried as infra,
per-side infra budgets, the readiness probe's diagnosis, and a reference agent that tolerates a resent prompt."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import anyio
import pytest

from protocol.kinds import InfraKind, Outcome
from staminad.bench.scenario import ScenarioParams, generate
from staminad.bench.texts import change_prompt, initial_prompt, render_spec
from staminad.engine.outcome import PLATFORM_KINDS
from staminad.engine.position import position
from staminad.reference.agent import run as reference_run
from staminad.sandbox.base import NotReady
from staminad.sandbox.readiness import log_tail, wait_ready
from state.store import AttemptRow, Store
from tests.helpers.sweeps import sweep, write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]

FAST = "request_timeout = 1\n"


async def _attempts(state: Path, sweep_id: str) -> list[AttemptRow]:
    async with await Store.open(state / "staminad.db") as store:
        rows = await store.scenarios(sweep_id)
        return await store.attempts(rows[0][1].id)


@pytest.mark.parametrize(
    ("fault", "kind", "says"),
    [
        ("no-server", "server_not_listening", "nothing was listening"),
        ("server-crash", "server_exited", "SyntaxError"),
        ("accept-close", "server_closed_connection", "closed the connection"),
        ("trickle", "server_too_slow", "no complete response"),
        ("slow", "server_too_slow", "no complete response"),
        ("huge-response", "server_bad_response", "broke the limits"),
        ("nested-json", "server_bad_response", "nested deeper than 64 levels"),  # past the probe, failed by the suite
        ("forked-server", "server_left_running", "left running"),
    ],
)
async def test_a_broken_server_is_the_agents_failure_and_consumes_r(
    tmp_path: Path, fault: str, kind: str, says: str
) -> None:
    """Each broken-server shape fails its attempt under its own category, uses a feedback retry (R), no infra."""
    path = write_sweep(tmp_path, f"srv-{fault}", [f"fault:{fault}:once"], turns=1, retries=1, extra=FAST)
    res = await sweep(path, tmp_path / "state")
    s = res[f"fault:{fault}:once R=1 detailed"]
    assert s.statuses == {"done": 1} and s.mean_turns == 2 and s.infra == {}
    first, second = (await _attempts(tmp_path / "state", f"srv-{fault}"))[:2]
    assert (first.turn, first.attempt, first.outcome, first.categories) == (0, 1, "fail", (kind,))
    assert first.feedback is not None and says in first.feedback
    assert (second.turn, second.attempt, second.prompt_kind, second.outcome) == (0, 2, "feedback", "pass")


async def test_a_server_that_never_starts_ends_the_scenario_failed_with_r_spent(tmp_path: Path) -> None:
    """A permanent server crash uses every retry of R and ends `failed` (scored), never `infra_failed`."""
    path = write_sweep(tmp_path, "crashing", ["fault:server-crash"], turns=1, retries=1)
    res = await sweep(path, tmp_path / "state")
    s = res["fault:server-crash R=1 detailed"]
    assert s.statuses == {"failed": 1} and s.mean_turns == 0 and s.infra == {}
    rows = await _attempts(tmp_path / "state", "crashing")
    assert [(r.attempt, r.categories) for r in rows] == [(1, ("server_exited",)), (2, ("server_exited",))]


async def test_a_harness_killing_its_own_sandbox_is_caught_at_once_as_a_harness_fault(tmp_path: Path) -> None:
    """The harness killing its whole process group is `harness_killed` (not `stuck` after the turn timeout)."""
    path = write_sweep(tmp_path, "suicide", ["fault:hostile:once"], turns=1, retries=0)
    path.write_text(path.read_text().replace("turn_timeout = 20", "turn_timeout = 300"))
    res = await sweep(path, tmp_path / "state")
    s = res["fault:hostile:once R=0 detailed"]
    assert s.statuses == {"done": 1} and s.mean_turns == 2 and s.infra == {"harness_killed": 1}


def _row(turn: int, attempt: int, infra_try: int, outcome: Outcome, kind: InfraKind | None = None) -> AttemptRow:
    return AttemptRow(
        id=0,
        scenario_id=1,
        turn=turn,
        attempt=attempt,
        infra_try=infra_try,
        phase="tested",
        prompt_kind="turn",
        prompt="p",
        launched_at=0.0,
        outcome=outcome,
        infra_kind=kind,
    )


def test_harness_and_platform_faults_have_separate_infra_budgets() -> None:
    """Platform faults do not use up the harness's infra retries, and the verdict says which side ran out."""
    rows = [
        _row(0, 1, 0, "pass"),
        _row(1, 1, 0, "infra", "harness_crash"),
        _row(1, 1, 1, "infra", "sandbox_lost"),
        _row(1, 1, 2, "infra", "engine_error"),
        _row(1, 1, 3, "infra", "stuck"),
    ]
    pos = position(rows, n_turns=3, retries=0, infra_retries=2)
    assert pos.final is None and (pos.turn, pos.attempt, pos.infra_try) == (1, 1, 4)
    harness_out = position([*rows, _row(1, 1, 4, "infra", "self_kill")], 3, 0, 2)
    assert harness_out.final == "infra_failed" and "scored with the turns passed" in harness_out.reason
    platform_out = position([*rows, _row(1, 1, 4, "infra", "port_taken")], 3, 0, 2)
    assert platform_out.final == "infra_failed" and "not scored" in platform_out.reason
    assert {"sandbox_lost", "engine_error", "port_taken", "llm_unavailable", "internal_error"} == set(PLATFORM_KINDS)


def test_a_server_failure_consumes_the_retry_budget() -> None:
    """A server-failure attempt counts like any failed suite: the next step is a feedback retry, then failed."""
    fail = AttemptRow(
        id=0,
        scenario_id=1,
        turn=0,
        attempt=1,
        infra_try=0,
        phase="tested",
        prompt_kind="turn",
        prompt="p",
        launched_at=0.0,
        outcome="fail",
        categories=("server_exited",),
        feedback="fb",
    )
    assert position([fail], 2, retries=1, infra_retries=5).prompt_kind == "feedback"
    assert position([fail], 2, retries=0, infra_retries=5).final == "failed"


async def _serve(handler: object, task_status: anyio.abc.TaskStatus[int]) -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    task_status.started(listener.extra(anyio.abc.SocketAttribute.local_port))
    await listener.serve(handler)  # type: ignore[arg-type]


def _delayed(seconds: float) -> object:
    async def handle(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await stream.receive(65536)
            await anyio.sleep(seconds)  # the server under test is slow on purpose
            await stream.send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")

    return handle


async def _up() -> bool:
    return True


async def test_the_readiness_probe_waits_as_long_as_a_suite_request_may() -> None:
    """A server slower than the first probes but within the per-request budget is ready, beyond it too slow."""
    async with anyio.create_task_group() as tg:
        port = await tg.start(_serve, _delayed(1.0))
        await wait_ready(f"http://127.0.0.1:{port}", 1.0, _up, request_timeout=4.0, listening=_up)
        with pytest.raises(NotReady) as info:
            await wait_ready(f"http://127.0.0.1:{port}", 1.0, _up, request_timeout=0.5, listening=_up)
        assert info.value.kind == "server_too_slow"
        tg.cancel_scope.cancel()


async def test_the_readiness_probe_names_a_huge_answer_and_a_closed_port() -> None:
    """An oversized answer to GET / is `server_bad_response`; a port nobody listens on `server_not_listening`."""

    async def huge(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await stream.receive(65536)
            await stream.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (8 << 20))

    async with anyio.create_task_group() as tg:
        port = await tg.start(_serve, huge)
        with pytest.raises(NotReady) as info:
            await wait_ready(f"http://127.0.0.1:{port}", 0.5, _up)
        assert info.value.kind == "server_bad_response" and "larger than" in str(info.value)
        tg.cancel_scope.cancel()
    with socket.socket() as s:  # a port that was just free and that nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with pytest.raises(NotReady) as info:
        await wait_ready(f"http://127.0.0.1:{closed}", 0.5, _up)
    assert info.value.kind == "server_not_listening"


def test_the_server_log_tail_is_bounded(tmp_path: Path) -> None:
    """Feedback shows only the end of a server log, however large the agent made it."""
    log = tmp_path / "server.log"
    log.write_bytes(b"x" * 5_000_000 + b"\nSyntaxError: invalid syntax\n")
    tail = log_tail(log, 100)
    assert tail.startswith("...") and tail.endswith("SyntaxError: invalid syntax\n") and len(tail) <= 103


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_reference_agent_applies_a_resent_change_request_once(tmp_path: Path, seed: int) -> None:
    """Every prompt of a scenario sent twice (as an infra retry does) leaves the same server as sending it once."""
    sc = generate(seed, ScenarioParams(turns=6))
    once, twice = tmp_path / "once", tmp_path / "twice"
    for ws in (once, twice):
        ws.mkdir()
        (ws / "initial_specification.md").write_text(render_spec(sc.initial))
    prompts, state = [initial_prompt("python")], sc.initial
    for batch in sc.turns:
        text, state = change_prompt(batch, state)
        prompts.append(text)
    for prompt in prompts:
        reference_run(once, prompt, None, False)
        reference_run(twice, prompt, None, False)
        reference_run(twice, prompt, None, False)
        assert json.loads((twice / "config.json").read_text()) == json.loads((once / "config.json").read_text())
