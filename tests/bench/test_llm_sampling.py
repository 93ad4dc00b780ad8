"""LLM-driven p0 and pi_env against the stand-in model: invalid proposals are refused and counted, the pack replays."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import msgspec

from staminad.bench.naming import Namer
from staminad.bench.sampler import initial_state, sample_turn, weights_for
from staminad.packio import read_pack
from tests.helpers.standin import Reply, StandIn


def test_llm_sampler_rejects_invalid_proposals_and_writes_a_replayable_pack(tmp_path: Path) -> None:
    """Bad designs and batches are refused with the reason sent back; three refusals fall back to pi_env."""
    rng = random.Random(4)
    namer = Namer("themed", rng)
    initial = initial_state(rng, namer)
    batch, _ = sample_turn(initial, rng, namer, weights_for("uniform"), 2, 0)
    impossible = '[{"type": "delete_entity", "name": "NoSuchThing"}, {"type": "delete_entity", "name": "Nope"}]'
    replies = [
        Reply(content='{"entities": "not a list"}'),
        Reply(content=msgspec.json.encode(initial).decode()),
        Reply(content=impossible),
        Reply(content=msgspec.json.encode(batch).decode()),
        Reply(content="not json"),
        Reply(content="[]"),
        Reply(content=impossible),
    ]
    with StandIn(replies) as standin:
        out = tmp_path / "pack"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "staminad.cli",
                "scenario",
                "generate",
                "--seeds",
                "0",
                "--turns",
                "2",
                "--changes-per-turn",
                "2",
                "--sampler",
                "llm",
                "--llm-endpoint",
                standin.url,
                "--llm-model",
                "standin-1",
                "-o",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        requests = list(standin.requests)
    assert done.returncode == 0, done.stderr
    assert "7 proposals, 5 rejected as invalid, 1 steps drawn procedurally" in done.stdout
    pack = read_pack(out)
    assert pack.manifest.sampling is not None and pack.manifest.sampling.rejected == 5
    assert pack.params.sampler == "llm"
    scenario = pack.scenario(0)
    assert scenario.initial == initial and scenario.turns[0] == tuple(batch) and len(scenario.turns[1]) == 2
    assert requests[0]["body"]["response_format"]["json_schema"]["name"] == "initial_design"
    assert requests[2]["body"]["response_format"]["json_schema"]["name"] == "change_batch"
    assert "Rejected:" in requests[3]["body"]["messages"][-1]["content"]  # the model is told why
    assert pack.prompt(0, 2)


def test_llm_sampler_needs_an_endpoint_and_says_so(tmp_path: Path) -> None:
    """Missing model settings (exit 2), or an endpoint that is down (a runtime error, exit 1), end in one line."""
    missing = subprocess.run(
        [sys.executable, "-m", "staminad.cli", "scenario", "generate", "--sampler", "llm", "-o", str(tmp_path / "p")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2 and "--sampler llm needs --llm-endpoint URL and --llm-model NAME" in missing.stderr
    down = subprocess.run(
        [
            sys.executable,
            "-m",
            "staminad.cli",
            "scenario",
            "generate",
            "--sampler",
            "llm",
            "--llm-endpoint",
            "http://127.0.0.1:9/v1",
            "--llm-model",
            "m",
            "-o",
            str(tmp_path / "p"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert down.returncode == 1 and "unreachable" in down.stderr and len(down.stderr.strip().splitlines()) == 1
