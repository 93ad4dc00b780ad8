"""Each real harness adapter: command lines, config files and output parsing, against recorded outputs."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from staminad.agents.base import adapter_for, list_adapters
from staminad.agents.harnesses import HARNESSES, Report
from staminad.sandbox.base import SandboxPaths

REC = Path(__file__).parent / "recordings"
BASE = "http://172.20.0.1:41000/g/tok/v1"


def _parse(name: str, recording: str, code: int = 0) -> Report:
    return HARNESSES[name].parse((REC / recording).read_text(), "", code)


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_every_harness_runs_unattended_and_continues_its_session(name: str) -> None:
    """Every harness carries prompt and model, continues its session and never waits on a person."""
    h = HARNESSES[name]
    first, again = h.first("PROMPT", "m-1"), h.resume("PROMPT", "m-1", "SESSION-9")
    assert ("PROMPT" in first and "PROMPT" in again and first != again) or name == "mini-swe-agent"
    assert any("m-1" in a for a in [*first, *h.env(BASE, "m-1").values(), *h.files(BASE, "m-1").values()])
    if name not in ("mini-swe-agent", "aider"):
        assert "SESSION-9" in again
    unattended = {
        "--dangerously-skip-permissions",
        "--dangerously-bypass-approvals-and-sandbox",
        "--yolo",
        "--yes-always",
        "--auto-approve",
        "--always-approve",
        "--print",
        "run",
        "--task",
    }
    assert unattended & set(first), first
    env = h.env(BASE, "m-1")
    assert any(BASE.removesuffix("/v1") in v for v in env.values()) or any(
        BASE in t for t in h.files(BASE, "m-1").values()
    )
    assert h.version and h.install.split(":")[0] in ("pypi", "npm")


def test_config_files_are_valid_and_point_at_the_gateway() -> None:
    """Codex and Vibe get TOML, OpenCode JSON; each names the gateway URL and the model; nothing phones home."""
    aider = HARNESSES["aider"]
    assert json.loads(aider.files(BASE, "m-1")[".aider/caches/model_prices_and_context_window.json"])
    assert aider.env(BASE, "m-1")["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    codex = tomllib.loads(HARNESSES["codex"].files(BASE, "m-1")[".codex/config.toml"])
    assert codex["model_providers"]["staminabench"]["base_url"] == BASE
    vibe = tomllib.loads(HARNESSES["mistral-vibe"].files(BASE, "m-1")[".vibe/config.toml"])
    assert vibe["providers"][0]["api_base"] == BASE and vibe["active_model"] == "m-1"
    opencode = json.loads(HARNESSES["opencode"].files(BASE, "m-1")[".config/opencode/opencode.json"])
    assert opencode["provider"]["staminabench"]["options"]["baseURL"] == BASE
    assert opencode["permission"] == {"edit": "allow", "bash": "allow"}


def test_recorded_outputs_give_session_success_and_tokens() -> None:
    """Each parser reads the session id, whether the harness itself succeeded, and token usage."""
    session = "0e4e08cc-f5de-483f-9420-f21c08fb3803"  # real captures: Claude Code 2.1.332, first call and --resume
    assert _parse("claude-code", "claude-code.jsonl") == Report(
        session=session, ok=True, input_tokens=25315, output_tokens=8600
    )
    assert _parse("claude-code", "claude-code-resume.jsonl") == Report(
        session=session, ok=True, input_tokens=11618, output_tokens=5
    )
    error = _parse("claude-code", "claude-code-error.jsonl", code=1)  # its result still says subtype "success"
    assert not error.ok and error.error.startswith("API Error: 503 staminabench gateway: model endpoint unavailable")
    # codex: real captures, pinned in test_codex_recordings.py
    assert _parse("opencode", "opencode.jsonl") == Report(
        session="ses_5b2f9c1e0ffeW1a2b3c4d5e6f7", ok=True, input_tokens=4500, output_tokens=500
    )
    assert _parse("qwen-code", "qwen-code.json") == Report(ok=True, input_tokens=41230, output_tokens=5120)
    # kimi-cli: real captures, pinned in test_kimi_recordings.py
    # openhands: real captures; no usage printed (the gateway meters); a refused model call still exits 0.
    assert _parse("openhands", "openhands-resume.out") == Report(session="cc388bca8c0e433d925b535ce1eef21a")
    refused = _parse("openhands", "openhands-error.out")
    assert (refused.session, refused.ok) == ("7f3d88788e0d4d6da6115553d5bcf43b", False)
    assert refused.error.startswith("LLMBadRequestError: litellm.BadRequestError: OpenAIException")
    assert not HARNESSES["openhands"].parse("", "Traceback ...\nImportError: x", 1).ok
    live = [_parse("aider", f"aider-live-{call}.txt") for call in ("first", "resume")]
    assert [(r.ok, r.input_tokens, r.output_tokens) for r in live] == [(True, 709, 13), (True, 751, 13)]
    assert "Restored previous conversation history." in (REC / "aider-live-resume.txt").read_text()
    aider = _parse("aider", "aider.txt")
    assert (aider.ok, aider.input_tokens, aider.output_tokens) == (True, 9800, 1220)
    broken = _parse("aider", "aider-apierror.txt", code=0)  # aider exits 0 here; the output says it failed
    assert not broken.ok and broken.error.startswith("litellm.APIConnectionError")
    assert not HARNESSES["qwen-code"].parse("", "boom", 1).ok


def test_qwen_code_reads_its_json_array_and_the_older_single_object() -> None:
    """Qwen Code's JSON array and its older single object are both read; a failed call keeps the model's words."""
    session = "7b1e2c3d-4f5a-6b7c-8d9e-0f1a2b3c4d5e"
    assert _parse("qwen-code", "qwen-code-array.json") == Report(
        session=session, ok=True, input_tokens=41230, output_tokens=5120
    )
    noisy = "Loaded cached credentials.\n" + (REC / "qwen-code-array.json").read_text()  # a line before the JSON
    assert HARNESSES["qwen-code"].parse(noisy, "", 0).session == session
    failed = _parse("qwen-code", "qwen-code-array-error.json", code=1)
    assert not failed.ok and failed.error == "503 staminabench gateway: model endpoint unavailable"
    assert failed.session == "0c0ffee0-1111-2222-3333-444455556666"
    assert not _parse("qwen-code", "qwen-code-array.json", code=1).ok  # a non-zero exit is never a success


def test_adapters_launch_through_the_launcher_and_are_listed() -> None:
    """A harness adapter runs `scripts/harness.py`; `staminad agents list` shows every adapter and version."""
    paths = SandboxPaths("/workspace", "/stamina", "/harness")
    argv = adapter_for("codex").argv(paths, "/stamina/prompts/t0.md")
    assert argv == [
        "python3",
        "/harness/agents/scripts/harness.py",
        "--harness",
        "codex",
        "--workspace",
        "/workspace",
        "--prompt-file",
        "/stamina/prompts/t0.md",
    ]
    names = {a.name for a in list_adapters()}
    assert set(HARNESSES) <= names and {"reference", "manual", "fault:hang"} <= names
    listed = subprocess.run(
        [sys.executable, "-m", "staminad.cli", "agents", "list", "--json"], capture_output=True, text=True, timeout=120
    )
    rows = {r["agent"]: r for r in json.loads(listed.stdout)}
    assert rows["aider"]["version"] == "0.86.2" and rows["aider"]["kind"] == "harness"
    claude = rows["claude-code"]
    assert claude["version"] == "2.1.332" and claude["base"].startswith("staminabench/sandbox:")
    assert claude["image"].startswith("staminabench/sandbox:claude-code-") and isinstance(claude["image_built"], bool)
    assert rows["mutant:accept-null"]["kind"] == "mutant" and isinstance(rows["reference"]["image_built"], bool)


def test_a_sweep_with_a_harness_needs_an_llm_table(tmp_path: Path) -> None:
    """A real harness without [llm] is refused in one line; with it the sweep parses."""
    path = tmp_path / "s.toml"
    path.write_text('name = "h"\n[matrix]\nagents = ["aider"]\n')
    done = subprocess.run(
        [sys.executable, "-m", "staminad.cli", "run", str(path), "--state-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "needs a model: add an [llm] table" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_each_configuration_runs_the_image_its_adapter_names(tmp_path: Path) -> None:
    """A sweep mixing harnesses needs each harness's own layer and `[run] image` for the built-ins, once each."""
    from staminad.agents.layers import layer_tag as harness_tag
    from staminad.engine.config import load_sweep, sweep_images
    from staminad.sandbox.runtimes import harness_hint

    path = tmp_path / "s.toml"
    path.write_text(
        'name = "mix"\n[matrix]\nagents = ["reference", "claude-code", "mini-swe-agent", "mutant:'
        'accept-null"]\nretries = [0, 1]\n[run]\nimage = "img:built-ins"\n'
        '[llm]\nendpoint = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    sweep, _ = load_sweep(path)
    assert sweep_images(sweep) == ["img:built-ins", harness_tag("claude-code"), harness_tag("mini-swe-agent")]
    assert adapter_for("claude-code").image == harness_tag("claude-code") != harness_tag("mini-swe-agent")
    assert adapter_for("reference").image == ""
    assert harness_hint(harness_tag("claude-code")) == " --harness claude-code" and harness_hint("img:x") == ""
