"""Each model's context window and compaction share, in the settings each harness reads (`staminad.agents.windows`)."""

from __future__ import annotations

import json
import tomllib

import pytest

from staminad.agents.harnesses import HARNESSES
from staminad.agents.windows import tune

BASE = "http://172.20.0.1:41000/g/tok/v1"


def _tuned(name: str, tokens: int = 131072, at: float = 0.75) -> tuple[dict[str, str], dict[str, str]]:
    h = HARNESSES[name]
    return tune(h, "qwen3-coder", h.env(BASE, "qwen3-coder"), h.files(BASE, "qwen3-coder"), tokens, at)


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_no_window_changes_nothing(name: str) -> None:
    """A sweep that gives its model no context window leaves every harness's environment and files as they were."""
    h = HARNESSES[name]
    assert _tuned(name, tokens=0) == (h.env(BASE, "qwen3-coder"), h.files(BASE, "qwen3-coder"))


def test_codex_gets_the_window_and_its_compaction_limit_as_root_keys() -> None:
    """Codex gets the window and compaction limit as root keys of config.toml, its provider table untouched."""
    config = tomllib.loads(_tuned("codex")[1][".codex/config.toml"])
    assert (config["model_context_window"], config["model_auto_compact_token_limit"]) == (131072, 98304)
    assert config["model_providers"]["staminabench"]["base_url"] == BASE
    assert "model_context_window" not in config["model_providers"]["staminabench"]


def test_claude_code_gets_the_window_and_the_percentage_in_its_environment() -> None:
    """An open model's name is unknown to Claude Code: its window and the autocompact percentage come from env."""
    env = _tuned("claude-code")[0]
    assert env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "131072"
    assert env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] == "75"
    assert env["ANTHROPIC_BASE_URL"] == BASE.removesuffix("/v1")  # the adapter's own settings are kept


def test_vibe_gets_the_window_and_threshold_on_its_model_entry() -> None:
    """Mistral Vibe's one [[models]] entry carries max_context_length and auto_compact_threshold (tokens)."""
    config = tomllib.loads(_tuned("mistral-vibe")[1][".vibe/config.toml"])
    (model,) = config["models"]
    assert (model["name"], model["max_context_length"], model["auto_compact_threshold"]) == (
        "qwen3-coder",
        131072,
        98304,
    )
    assert "max_context_length" not in config["providers"][0]


def test_opencode_qwen_kimi_aider_and_mini_each_get_their_own_setting() -> None:
    """OpenCode's model limit, Qwen Code's settings.json, Kimi's env, aider's model metadata, mini's driver env."""
    opencode = json.loads(_tuned("opencode")[1][".config/opencode/opencode.json"])
    limit = opencode["provider"]["staminabench"]["models"]["qwen3-coder"]["limit"]
    assert limit == {"context": 131072, "output": 32000}
    qwen = json.loads(_tuned("qwen-code")[1][".qwen/settings.json"])
    assert qwen["model"]["generationConfig"]["contextWindowSize"] == 131072
    assert qwen["model"]["chatCompression"]["contextPercentageThreshold"] == 0.75
    assert qwen["security"]["auth"]["selectedType"] == "openai" and qwen["model"]["name"] == "qwen3-coder"
    assert _tuned("kimi-cli")[0]["KIMI_MODEL_MAX_CONTEXT_SIZE"] == "131072"
    aider = json.loads(_tuned("aider")[1][".aider.model.metadata.json"])
    assert aider["openai/qwen3-coder"]["max_input_tokens"] == 131072
    mini = _tuned("mini-swe-agent")[0]
    assert (mini["STAMINA_MINI_CONTEXT_WINDOW"], mini["STAMINA_MINI_COMPACT_AT"]) == ("131072", "0.75")
