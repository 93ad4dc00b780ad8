"""Debian's Prometheus scrapes a live daemon during a sweep, with a gateway serving beside it: every dashboard
query and alert rule evaluates, and those over the series they make return data; promtool accepts the rules and
our exposition."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from staminad.gateway.pricing import Price
from staminad.gateway.proxy import Gateway, Limits
from tests.helpers import free_port
from tests.helpers.inprocess import events, running_daemon, submit, until
from tests.helpers.standin import Fault, Reply, StandIn
from tests.helpers.sweeps import write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]
OPS = Path(__file__).resolve().parents[2] / "ops"
# Series this local sweep cannot make: no `--engine`, no GPU, no Docker sandboxes, no model calls recorded by a
# sweep, and no vLLM or SGLang server scraped (a gateway serves beside it: its panels have data). Their queries
# must still evaluate without error.
EMPTY_HERE = (
    "staminad_engine_",
    "staminad_gpu_utilization",
    "staminad_gpu_memory",
    "staminad_gpu_process",
    "staminad_sandbox_",
    "staminad_llm_tokens",
    "staminad_llm_cost_cap",
    "vllm:",
    "sglang:",
)


def dashboard_queries() -> list[str]:
    dash = json.loads((OPS / "grafana" / "staminabench.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    return [e.replace("$__rate_interval", "1m").replace("$sweep", ".*") for e in exprs]


def rule_queries() -> list[str]:
    import yaml

    rules = yaml.safe_load((OPS / "prometheus" / "alerts.yml").read_text())
    return [r["expr"] for g in rules["groups"] for r in g["rules"]]


async def query(client: httpx.AsyncClient, base: str, expr: str) -> dict[str, Any]:
    reply = (await client.get(f"{base}/api/v1/query", params={"query": expr})).json()
    assert reply["status"] == "success", (expr, reply)
    return dict(reply["data"])


async def test_prometheus_scrapes_the_daemon_and_every_panel_and_rule_evaluates(tmp_path: Path) -> None:
    """Every panel and rule query evaluates against a real scrape, ours return data, and promtool checks pass."""
    checked = await anyio.run_process(
        ["promtool", "check", "rules", str(OPS / "prometheus" / "alerts.yml")], check=False
    )
    assert checked.returncode == 0, checked.stderr.decode()
    state, port, web = tmp_path / "st", free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: [{OPS / 'prometheus' / 'alerts.yml'}]\n"
        f"scrape_configs: [{{job_name: staminad, static_configs: [{{targets: ['127.0.0.1:{port}']}}]}}]\n"
    )
    # A manual configuration holds its scenario, so the sweep is still running (its gauges present) when
    # the others have finished and recorded passes, an infra failure and durations.
    path = write_sweep(tmp_path, "prom", ["reference", "fault:crash:once", "manual"], turns=1)
    base = f"http://127.0.0.1:{web}"
    async with (
        running_daemon(state, metrics_port=port, log_to_stderr=False),
        events(state, ("prom",)) as stream,
        _gateway_beside() as gateway_calls,
    ):
        await submit(state, path)
        await gateway_calls()
        for _ in range(2):  # the reference and the crashing one; the manual one waits for a person
            await until(stream, "scenario_finished")
        async with httpx.AsyncClient(timeout=30) as client:
            exposition = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
            lint = await anyio.run_process(["promtool", "check", "metrics"], input=exposition.encode(), check=False)
            assert lint.returncode == 0, lint.stdout.decode() + lint.stderr.decode()
            proc = await anyio.open_process(
                [
                    "prometheus",
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{web}",
                ]
            )
            try:
                empty = await _evaluate(client, base)
                rules = (await client.get(f"{base}/api/v1/rules")).json()["data"]["groups"][0]["rules"]
            finally:
                proc.terminate()
                with anyio.move_on_after(30):
                    await proc.wait()
    assert len(rules) == len(rule_queries()) and all(r["health"] == "ok" for r in rules), rules
    ours = [e for e in empty if not any(k in e for k in EMPTY_HERE)]
    assert ours == [], ours


@asynccontextmanager
async def _gateway_beside() -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """A sweep's gateway serving in the daemon's process with a stand-in model behind it (the gateway panels read
    it through the same registry as a real sweep's); the function it yields makes a few calls through it."""
    with StandIn([Reply(content=f"r{i}", usage=i != 0) for i in range(4)]) as standin:
        standin.faults.append(Fault("status", 429, retry_after=0.0))  # an upstream error, waited out
        prices = {"standin-1": Price(input=1.0, output=2.0)}
        gw = Gateway(standin.url, "", prices, Limits(backoff_start=0.05), lambda _: None)
        async with anyio.create_task_group() as tg, httpx.AsyncClient(timeout=30) as client:
            await tg.start(gw.serve, ["127.0.0.1"], free_port())
            route = gw.route("prom", 1)

            async def calls() -> None:
                for _ in range(4):
                    chat = {"model": "standin-1", "messages": [{"role": "user", "content": "hi"}]}
                    await client.post(f"{gw.base_url(route, '127.0.0.1')}/chat/completions", json=chat)

            yield calls
            tg.cancel_scope.cancel()


async def _evaluate(client: httpx.AsyncClient, base: str) -> list[str]:
    """Once Prometheus has scraped a few times and evaluated its rules: every query evaluates; the dashboard
    queries that returned no data."""
    with anyio.fail_after(180):
        while True:
            try:
                up = await query(client, base, 'up{job="staminad"} == 1')
            except httpx.TransportError:  # Prometheus is still starting
                up = {"result": []}
            scrapes = await query(client, base, "count_over_time(staminad_slots[1m])") if up["result"] else {}
            if scrapes.get("result") and float(scrapes["result"][0]["value"][1]) >= 3:  # rates need two points
                break
            await anyio.sleep(0.5)  # polling another process's scrapes
        while True:  # every rule evaluated at least once over those scrapes
            groups = (await client.get(f"{base}/api/v1/rules")).json()["data"]["groups"]
            if groups and all(not r["lastEvaluation"].startswith("0001") for r in groups[0]["rules"]):
                break
            await anyio.sleep(0.5)  # polling another process's rule evaluation
        for expr in rule_queries():  # conditions: empty unless firing, but never an error
            await query(client, base, expr)
        return [e for e in dashboard_queries() if not (await query(client, base, e))["result"]]
