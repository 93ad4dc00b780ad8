"""OpenCode (`opencode run --format json`), through an OpenAI-compatible provider named in its JSON config.

npm only: its layer must be built on a host that reaches npm. No transcript is read.
"""

from __future__ import annotations

import json

from ._kit import Harness, Layer, Report, as_dict, as_int, json_lines

_CONFIG = ".config/opencode/opencode.json"


def _parse(out: str, err: str, code: int) -> Report:
    events = json_lines(out)
    session = next((str(e.get("sessionID")) for e in events if e.get("sessionID")), "")
    tin = tout = 0
    error = ""
    for e in events:
        part = as_dict(e.get("part"))
        if e.get("type") == "step_finish":
            tokens = as_dict(part.get("tokens"))
            tin += as_int(tokens.get("input")) + as_int(as_dict(tokens.get("cache")).get("read"))
            tout += as_int(tokens.get("output"))
        if e.get("type") == "error":
            error = str(as_dict(e.get("error")).get("message") or "error")
    return Report(session=session, ok=code == 0 and not error, input_tokens=tin, output_tokens=tout, error=error)


def _config(base: str, model: str) -> str:
    return json.dumps(
        {
            "$schema": "https://opencode.ai/config.json",
            "permission": {"edit": "allow", "bash": "allow"},
            "provider": {
                "staminabench": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "staminabench gateway",
                    "options": {"baseURL": base, "apiKey": "gateway"},
                    "models": {model: {"name": model}},
                }
            },
        },
        indent=2,
    )


def _window(model: str, tokens: int, limit: int, at: float, env: dict[str, str], files: dict[str, str]) -> None:
    """The model's `limit.context` (and `limit.output`); no threshold is settable (it compacts near the limit)."""
    config = json.loads(files[_CONFIG])
    entry = config["provider"]["staminabench"]["models"][model]
    entry["limit"] = {"context": tokens, "output": min(32_000, max(1, tokens // 4))}
    files[_CONFIG] = json.dumps(config, indent=2)


def _run(prompt: str, model: str, *session: str) -> list[str]:
    return ["opencode", "run", "--format", "json", "-m", f"staminabench/{model}", *session, prompt]


HARNESS = Harness(
    # The paper's version (its table 9); npm only, so its layer cannot be built on this machine.
    name="opencode",
    version="1.4.3",
    layer=Layer(install="npm:opencode-ai@1.4.3"),
    first=lambda prompt, model: _run(prompt, model),
    resume=lambda prompt, model, session: _run(prompt, model, "--session", session),
    env=lambda base, model: {"OPENCODE_CONFIG": _CONFIG, "OPENCODE_DISABLE_AUTOUPDATE": "1"},
    files=lambda base, model: {_CONFIG: _config(base, model)},
    parse=_parse,
    # 1.x keeps every session in one store (opencode.db and storage/ under its data directory): put back whole.
    history=lambda session: (".local/share/opencode",),
    window=_window,
    caveat="npm only (opencode-ai), unreachable here: its layer must be built on a host that reaches npm; "
    "parser and command lines checked against its documented `run --format json` events",
)
