"""End to end: OpenHands 1.12.1 (`--headless --json --always-approve --override-with-envs`) in Docker, via the gateway.

Its layer goes on the trixie base (Python 3.13; the CLI's `==3.12.*` ceiling alone is ignored) with the
versions the release's own lock names. The stand-in answers with tool calls for its `terminal` and
`file_editor` tools, so OpenHands writes the files and runs the commands. Turn 0 writes the reference
agent's files and finishes; turn 1's first attempt changes nothing, its feedback retry rewrites the files.
Both turns pass via `staminad run`; every call is metered against its attempt; the retry resumes the
conversation by id (its request carries the earlier exchange), and its LLM settings came from the
environment (the gateway's base URL, the model's name).
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from staminad.bench.readme import render_readme
from staminad.bench.scenario import generate
from staminad.bench.texts import change_prompt, initial_prompt, render_spec
from staminad.reference import agent as reference_agent
from staminad.reference.agent import SERVER_PACKAGE
from tests.helpers.e2e import COMPILE, FILES, PARAMS, scenario_end, started_outcomes
from tests.helpers.e2e import codex_sweep as _sweep
from tests.helpers.e2e import run_sweep as _run
from tests.helpers.standin import Reply, StandIn

pytestmark = [pytest.mark.docker, pytest.mark.e2e, pytest.mark.sweep]

MODEL = "standin-1"


def _write(work: Path) -> Reply:
    """One reply that writes the reference agent's files as a model drives OpenHands: clear them with its
    `terminal` tool, create each with its `file_editor` (a terminal line longer than its PTY's 4 KB canonical
    limit is cut), then make the script runnable and compile the server. Each call carries the risk field
    its tool schema asks for."""
    calls: list[dict[str, Any]] = [_terminal(f"rm -f {' '.join(FILES)} && mkdir -p {SERVER_PACKAGE}")]
    for name in FILES:
        text = (work / name).read_text()
        calls.append(
            {
                "name": "file_editor",
                "arguments": {
                    "command": "create",
                    "path": f"/workspace/{name}",
                    "file_text": text,
                    "security_risk": "LOW",
                },
            }
        )
    calls.append(_terminal(f"chmod +x run_server.sh && {COMPILE} && echo rewritten"))
    return Reply(tool_calls=calls)


def _terminal(command: str) -> dict[str, Any]:
    return {"name": "terminal", "arguments": {"command": command, "security_risk": "LOW"}}


def _script(tmp: Path) -> list[Reply]:
    """Write the server, finish; a do-nothing attempt; the fix, finish."""
    scenario = generate(0, PARAMS)
    work = tmp / "scripted"
    work.mkdir()
    (work / "README.md").write_text(render_readme("python"))
    (work / "initial_specification.md").write_text(render_spec(scenario.initial))
    reference_agent.run(work, initial_prompt("python"), None, False)
    first = [_write(work), Reply(content="The server is written and compiles.")]
    reference_agent.run(work, change_prompt(scenario.turns[0], scenario.initial)[0], None, False)
    return [*first, Reply(content="Nothing needs to change."), _write(work), Reply(content="Applied the changes.")]


@pytest.mark.timeout(1800)
def test_openhands_passes_two_turns_and_a_feedback_retry_in_one_conversation(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Turn 0 passes, turn 1 on its retry; 5 metered chat calls; the retry continues the same conversation."""
    from staminad.agents.layers import layer_spec
    from staminad.sandbox.docker.image import build_harness

    image, _ = build_harness(layer_spec("openhands"), tmp_path_factory.mktemp("layer"))
    with StandIn(_script(tmp_path), model=MODEL) as standin:
        state = tmp_path / "st"
        done = _run(_sweep(tmp_path, standin, image, agent="openhands", model=MODEL), state, timeout=1500)
        requests = list(standin.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    outcomes = started_outcomes(state)
    assert [o[:2] for o in outcomes] == [(0, 1), (1, 1), (1, 2)], (outcomes, done.stdout)
    assert outcomes[0][2] == "pass" and outcomes[1][2] != "pass" and outcomes[2][2] == "pass", outcomes
    assert scenario_end(state)[:2] == ("done", 2)
    db = sqlite3.connect(state / "staminad.db")
    calls = db.execute(
        "SELECT a.turn, a.attempt, l.input_tokens, l.output_tokens, l.cost FROM llm_calls l "
        "JOIN attempts a ON a.id = l.attempt_id ORDER BY l.id"
    ).fetchall()
    assert [c[:2] for c in calls] == [(0, 1)] * 2 + [(1, 1)] + [(1, 2)] * 2, calls
    assert all(c[2] > 0 and c[3] > 0 and c[4] > 0 for c in calls)
    assert len(requests) == 5 and all(r["path"].endswith("/chat/completions") for r in requests)
    assert {r["body"]["model"] for r in requests} == {MODEL}  # LLM_MODEL reached it (through litellm's openai/)
    assert {"terminal", "file_editor"} <= {t["function"]["name"] for t in requests[0]["body"]["tools"]}
    answered = requests[1]["body"]["messages"]
    # Each call's result went back to the model: a terminal call, one file_editor create per file, a terminal call.
    assert sum(m.get("role") == "tool" for m in answered) == len(FILES) + 2
    # Its file_editor's results are asserted, not the terminal's output: without tmux (not in the base) it runs
    # commands in a subprocess PTY whose output it reads back only at times (`rewritten` came back in one run
    # of two here; the command ran both times, as the passing turn shows).
    assert sum("File created successfully" in json.dumps(m.get("content")) for m in answered) == len(FILES)
    retry = [json.dumps(m) for m in requests[3]["body"]["messages"]]
    assert any("initial_specification.md" in t for t in retry)
    assert any("The server is written and compiles." in t for t in retry)
    assert any("Nothing needs to change." in t for t in retry)
    target = os.environ.get("STAMINABENCH_CAPTURE")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        for out in sorted(state.glob("**/.staminabench/openhands-*.out")):
            (Path(target) / out.name).write_text(out.read_text())
