"""Each model's context window, and the share of it at which to compact, in every harness's own settings.

Standard library only: the launcher (`scripts/harness.py`) imports this beside `harnesses.py` inside the
sandbox. An open model's name is unknown to the harness binaries, so without these they run on a fallback
window (Claude Code's 200k, Codex's fallback metadata) and compact too late (the request is refused over the
window) or never. `tune` takes a harness's environment and config files as `harnesses.py` writes them and
adds the window where the harness has such a setting; a window of 0 (the sweep gives none) changes nothing.

| harness | window | compaction threshold |
| --- | --- | --- |
| mini-swe-agent | `STAMINA_MINI_CONTEXT_WINDOW` (our driver) | `STAMINA_MINI_COMPACT_AT` (our driver compacts) |
| claude-code | `CLAUDE_CODE_MAX_CONTEXT_TOKENS`, `..._AUTO_COMPACT_WINDOW` | `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` |
| codex | `model_context_window` | `model_auto_compact_token_limit` |
| opencode | the model's `limit.context` (and `limit.output`) | none settable (it compacts near the limit) |
| qwen-code | `model.generationConfig.contextWindowSize` | `model.chatCompression.contextPercentageThreshold` |
| kimi-cli | `KIMI_MODEL_MAX_CONTEXT_SIZE` | none settable |
| mistral-vibe | the model's `max_context_length` | the model's `auto_compact_threshold` (tokens) |
| aider | `max_input_tokens` in `$HOME/.aider.model.metadata.json` | none (aider does not compact) |

OpenHands is not here yet: its settings come with its headless adapter.
"""

from __future__ import annotations

import json

DEFAULT_COMPACT_AT = 0.8  # a share of the window; the sweep's model may set its own (`compact_at`)


def tune(
    name: str, model: str, env: dict[str, str], files: dict[str, str], tokens: int, at: float
) -> tuple[dict[str, str], dict[str, str]]:
    """The harness's environment and HOME-relative files with the model's window (`tokens`) and threshold (`at`)."""
    env, files = dict(env), dict(files)
    if tokens <= 0:
        return env, files
    limit = max(1, int(tokens * at))
    if name == "mini-swe-agent":
        env |= {"STAMINA_MINI_CONTEXT_WINDOW": str(tokens), "STAMINA_MINI_COMPACT_AT": str(at)}
    elif name == "claude-code":
        env |= {
            "CLAUDE_CODE_MAX_CONTEXT_TOKENS": str(tokens),
            "CLAUDE_CODE_AUTO_COMPACT_WINDOW": str(tokens),
            "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": str(max(1, min(100, round(at * 100)))),
        }
    elif name == "codex":
        # Root keys must come before the first table; the file starts with root keys, so these go first.
        path = ".codex/config.toml"
        files[path] = f"model_context_window = {tokens}\nmodel_auto_compact_token_limit = {limit}\n" + files[path]
    elif name == "opencode":
        path = ".config/opencode/opencode.json"
        config = json.loads(files[path])
        entry = config["provider"]["staminabench"]["models"][model]
        entry["limit"] = {"context": tokens, "output": min(32_000, max(1, tokens // 4))}
        files[path] = json.dumps(config, indent=2)
    elif name == "qwen-code":
        path = ".qwen/settings.json"
        config = json.loads(files.get(path, "{}"))
        section = config.setdefault("model", {})
        section.setdefault("generationConfig", {})["contextWindowSize"] = tokens
        section.setdefault("chatCompression", {})["contextPercentageThreshold"] = at
        files[path] = json.dumps(config, indent=2)
    elif name == "kimi-cli":
        env["KIMI_MODEL_MAX_CONTEXT_SIZE"] = str(tokens)
    elif name == "mistral-vibe":
        # The config's last table is the one [[models]] entry (harnesses.VIBE): its keys go at the end.
        path = ".vibe/config.toml"
        files[path] = files[path] + f"max_context_length = {tokens}\nauto_compact_threshold = {limit}\n"
    elif name == "aider":
        meta = {f"openai/{model}": {"max_input_tokens": tokens, "litellm_provider": "openai", "mode": "chat"}}
        files[".aider.model.metadata.json"] = json.dumps(meta, indent=2)
    return env, files
