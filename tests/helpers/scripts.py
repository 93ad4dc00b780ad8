"""The model's side of the real harnesses' end-to-end conversations on seed 0 (`tests.helpers.e2e.PARAMS`): scripted
replies that make mini-swe-agent, Claude Code and Codex write the reference agent's files with their own tools,
turn by turn. Shared by each harness's own end-to-end test and by the harness x model grid.
"""

from __future__ import annotations

import base64
from pathlib import Path

from staminad.bench.readme import render_readme
from staminad.bench.scenario import generate
from staminad.bench.texts import change_prompt, initial_prompt, render_spec
from staminad.reference import agent as reference_agent
from staminad.reference.agent import SERVER_PACKAGE
from tests.helpers.e2e import COMPILE, FILES, PARAMS, rewrite_files
from tests.helpers.standin import Reply


def _workspace(tmp: Path) -> Path:
    """A fresh workspace under `tmp` with the README and the initial specification the harness is given."""
    work = tmp / "scripted"
    work.mkdir()
    (work / "README.md").write_text(render_readme("python"))
    (work / "initial_specification.md").write_text(render_spec(generate(0, PARAMS).initial))
    return work


def _prompts() -> list[str]:
    """The turn-0 prompt and the turn-1 change prompt of seed 0."""
    scenario = generate(0, PARAMS)
    return [initial_prompt("python"), change_prompt(scenario.turns[0], scenario.initial)[0]]


def _write_files(workspace: Path) -> str:
    """A bash command that recreates the reference agent's output files exactly."""
    parts = [f"mkdir -p {SERVER_PACKAGE}"]
    for name in FILES:
        data = base64.b64encode((workspace / name).read_bytes()).decode()
        parts.append(f"echo {data} | base64 -d > {name}")
    return " && ".join(parts) + " && chmod +x run_server.sh && ls"


def mini_script(tmp: Path) -> list[Reply]:
    """mini-swe-agent's model: write the server, submit; apply the change, submit (4 replies)."""
    work = _workspace(tmp)
    replies = []
    for prompt in _prompts():
        reference_agent.run(work, prompt, None, False)
        replies += [
            Reply(tool_calls=[{"name": "bash", "arguments": {"command": _write_files(work)}}]),
            Reply(
                tool_calls=[{"name": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}]
            ),
        ]
    return replies


def reference_files(tmp: Path) -> list[dict[str, str]]:
    """The reference agent's files for turn 0 and for turn 1, as {name: text}."""
    work = _workspace(tmp)
    out = []
    for prompt in _prompts():
        reference_agent.run(work, prompt, None, False)
        out.append({name: (work / name).read_text() for name in FILES})
    return out


def claude_script(tmp: Path, false_claim: bool = True) -> list[Reply]:
    """Claude Code's model: Write the files, Bash-check, finish; turn 1: a false claim (tests fail) when
    `false_claim`, then the fix (7 replies, 6 without the claim)."""
    turn0, turn1 = reference_files(tmp)
    writes = [
        {"name": "Write", "arguments": {"file_path": f"/workspace/{name}", "content": text}}
        for name, text in turn0.items()
    ]
    # Files that exist already are rewritten through Bash: Claude Code's Write refuses a file it has not Read.
    rewrite = " && ".join(
        f"echo {base64.b64encode(text.encode()).decode()} | base64 -d > {name}" for name, text in turn1.items()
    )
    check = {
        "name": "Bash",
        "arguments": {
            "command": f"{COMPILE} && echo compiled",
            "description": "Check the server compiles",
        },
    }
    return [
        Reply(content="I'll write the server.", tool_calls=writes),
        Reply(tool_calls=[check]),
        Reply(content="The server is written and compiles."),
        *([Reply(content="The change is made.")] if false_claim else []),
        Reply(tool_calls=[{"name": "Bash", "arguments": {"command": rewrite, "description": "Apply"}}]),
        Reply(tool_calls=[check]),
        Reply(content="Fixed: the change is in place."),
    ]


def _add_patch(workspace: Path) -> str:
    """An apply_patch patch adding the reference agent's files."""
    lines = ["*** Begin Patch"]
    for name in FILES:
        lines.append(f"*** Add File: {name}")
        lines += [f"+{line}" for line in (workspace / name).read_text().splitlines()]
    return "\n".join([*lines, "*** End Patch"]) + "\n"


def codex_script(tmp: Path, idle_attempt: bool = True) -> list[Reply]:
    """Codex's model: patch in the server (apply_patch), check it, finish; turn 1: an attempt that changes nothing
    (its tests fail) when `idle_attempt`, then the fix through a command (6 replies, 5 without the idle one)."""
    work = _workspace(tmp)
    first, change = _prompts()
    reference_agent.run(work, first, None, False)
    replies = [
        Reply(content="Adding the server.", tool_calls=[{"name": "apply_patch", "input": _add_patch(work)}]),
        Reply(
            tool_calls=[
                {
                    "name": "exec_command",
                    "arguments": {"cmd": f"chmod +x run_server.sh && {COMPILE} && echo compiled"},
                }
            ]
        ),
        Reply(content="The server is written and compiles."),
        *([Reply(content="Nothing needs to change.")] if idle_attempt else []),
    ]
    reference_agent.run(work, change, None, False)
    return [
        *replies,
        Reply(tool_calls=[{"name": "exec_command", "arguments": {"cmd": rewrite_files(work)}}]),
        Reply(content="Applied the changes."),
    ]
