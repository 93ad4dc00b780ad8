"""docs/shared-gpu-box.md as written: its sweep loads (cost cap over several models), its refusal is the real
one, and each listed model's concurrency limit holds at its own stand-in endpoint (a concurrency probe)."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import httpx
import pytest

from protocol.events import EventData
from staminad.engine.access import build_gateway, upstream_of
from staminad.engine.config import SweepError, configurations, load_sweep
from staminad.engine.models import sweep_models
from staminad.gateway.routes import Call
from tests.helpers import free_port
from tests.helpers.standin import Reply, StandIn

GUIDE = Path(__file__).parents[2] / "docs" / "shared-gpu-box.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", GUIDE.read_text(), flags=re.S)


def _guide_sweep(tmp_path: Path, edit: dict[str, str] | None = None) -> Path:
    (text,) = _blocks("toml")
    for old, new in (edit or {}).items():
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "gpu-box-grid.toml"
    path.write_text(text)
    return path


def test_the_guides_capped_multi_model_sweep_loads_as_written(tmp_path: Path) -> None:
    """The guide's grid, with its sweep cost cap over two priced models, loads: 4 harnesses x 2 models."""
    sweep, _ = load_sweep(_guide_sweep(tmp_path))
    assert sweep.llm is not None and sweep.llm.sweep_cost_cap == 50.0
    names = [c.name for c in configurations(sweep)]
    assert len(names) == 8 and "mini-swe-agent qwen3-coder R=2 detailed" in names


def test_a_cap_over_a_model_without_a_price_names_that_model(tmp_path: Path) -> None:
    """A cost cap with one model unpriced is refused in one line naming that model, not an empty name."""
    second = "concurrency = 4\nprice = { input = 0.0, output = 0.0 }\n"
    path = _guide_sweep(tmp_path, {second: "concurrency = 4\n"})
    with pytest.raises(SweepError, match=r"cost cap is set but 'glm-4.5-air' has no price") as err:
        load_sweep(path)
    assert "\n" not in str(err.value) and "''" not in str(err.value)
    table = '[llm.pricing."glm-4.5-air"]\ninput = 0.1\noutput = 0.2\n'
    (tmp_path / "priced.toml").write_text(path.read_text().replace("[[llm.models]]", table + "\n[[llm.models]]", 1))
    load_sweep(tmp_path / "priced.toml")  # a price in the table serves as well


def test_the_guides_protocol_refusal_is_the_one_a_sweep_gets(tmp_path: Path) -> None:
    """The refusal the guide prints for claude-code on an openai-chat-only GLM is word for word the real one."""
    (shown,) = re.findall(r"```\n(gpu-box-grid\.toml: .*?)```", GUIDE.read_text(), flags=re.S)
    glm = 'endpoint = "http://127.0.0.1:8001/v1"\nprotocols = ["openai-chat", "openai-responses", "anthropic-messages"]'
    only_chat = 'endpoint = "http://127.0.0.1:8001/v1"\nprotocols = ["openai-chat"]'
    with pytest.raises(SweepError) as err:
        load_sweep(_guide_sweep(tmp_path, {glm: only_chat}))
    assert str(err.value).replace(str(tmp_path) + "/", "") == " ".join(shown.split())


@pytest.mark.anyio
async def test_every_listed_models_concurrency_limit_holds_at_its_endpoint(tmp_path: Path) -> None:
    """Concurrency probe: six calls each to two stand-ins at limits 1 and 2 (the first model's is no fallback's)."""
    with StandIn([Reply(content="a")] * 6) as a, StandIn([Reply(content="b")] * 6) as b:
        a.delay = b.delay = 0.15
        edit = {
            '"http://127.0.0.1:8000/v1"': f'"{a.url}"',
            '"http://127.0.0.1:8001/v1"': f'"{b.url}"',
            "concurrency = 8 ": "concurrency = 1 ",
            "concurrency = 4\n": "concurrency = 2\n",
        }
        sweep, _ = load_sweep(_guide_sweep(tmp_path, edit))
        assert sweep.llm is not None
        calls: list[Call] = []
        seen: list[EventData] = []

        async def record(call: Call) -> None:
            calls.append(call)

        gw = build_gateway(sweep.llm, seen.append, record)
        first, second = sweep_models(sweep.llm)
        async with anyio.create_task_group() as tg, httpx.AsyncClient(timeout=60) as client:
            await tg.start(gw.serve, ["127.0.0.1"], free_port())
            routes = [gw.route(sweep.name, i, upstream=upstream_of(first if i < 6 else second)) for i in range(12)]

            async def call(i: int) -> None:
                model = first.name if i < 6 else second.name
                chat = {"model": model, "messages": [{"role": "user", "content": "probe"}]}
                r = await client.post(f"{gw.base_url(routes[i], '127.0.0.1')}/chat/completions", json=chat)
                assert r.status_code == 200

            async with anyio.create_task_group() as probes:
                for i in range(12):
                    probes.start_soon(call, i)
            tg.cancel_scope.cancel()
        stats = {s.endpoint: s for s in gw.endpoint_stats()}
    assert a.peak == 1 and 1 <= b.peak <= 2 and len(calls) == 12
    assert stats[a.url].ceiling == 1 and stats[b.url].ceiling == 2 and len(stats) == 2
    assert stats[a.url].queued_seconds > 0  # the probe's calls overlapped: the limit, not luck, kept them apart


def test_models_sharing_one_endpoint_share_its_limit_at_the_smallest_they_name() -> None:
    """Two models served by one server are one limiter, at the smaller concurrency; an unnamed one takes [llm]'s."""
    from staminad.gateway.proxy import Gateway, Limits, Upstream

    models = [Upstream("http://e/v1/", concurrency=5), Upstream("http://e/v1", concurrency=3), Upstream("http://f/v1")]
    gw = Gateway("http://e/v1", "", {}, Limits(concurrency=7), lambda _: None, None, models)
    assert {s.endpoint: s.ceiling for s in gw.endpoint_stats()} == {"http://e/v1": 3, "http://f/v1": 7}
