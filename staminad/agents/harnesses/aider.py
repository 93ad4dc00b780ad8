"""Aider (`aider --message`), continuing through its chat history file in the workspace.

It exits 0 when the model call fails, so success is read from its output; its token counts are read from its
"Tokens: ... sent, ... received" lines. No transcript is read.
"""

from __future__ import annotations

import json
import re

from ._kit import Harness, Layer, Report

_TOKENS = re.compile(r"Tokens: ([\d.]+)(k?) sent(?:, [\d.]+k? cache (?:write|hit))*, ([\d.]+)(k?) received")


def _count(number: str, k: str) -> int:
    return int(float(number) * (1000 if k else 1))


def _parse(out: str, err: str, code: int) -> Report:
    tin = tout = 0
    for m in _TOKENS.finditer(out):
        tin += _count(m.group(1), m.group(2))
        tout += _count(m.group(3), m.group(4))
    problems = [
        line for line in (out + "\n" + err).splitlines() if line.startswith(("litellm.", "Error:", "The API provider"))
    ]
    return Report(
        session=".aider.chat.history.md",
        ok=code == 0 and not problems,
        input_tokens=tin,
        output_tokens=tout,
        error=problems[-1] if problems else "",
    )


def _window(model: str, tokens: int, limit: int, at: float, env: dict[str, str], files: dict[str, str]) -> None:
    """`max_input_tokens` in `$HOME/.aider.model.metadata.json`; aider does not compact."""
    meta = {f"openai/{model}": {"max_input_tokens": tokens, "litellm_provider": "openai", "mode": "chat"}}
    files[".aider.model.metadata.json"] = json.dumps(meta, indent=2)


_FLAGS = [
    "--yes-always",
    "--no-auto-commits",
    "--no-pretty",
    "--no-stream",
    "--no-check-update",
    "--no-show-release-notes",
    "--no-analytics",
    "--no-gitignore",
    "--no-git",
    "--no-show-model-warnings",
]
HARNESS = Harness(
    name="aider",
    version="0.86.2",
    layer=Layer(install="pypi:aider-chat==0.86.2"),
    first=lambda prompt, model: ["aider", *_FLAGS, "--model", f"openai/{model}", "--message", prompt],
    resume=lambda prompt, model, session: [
        "aider",
        *_FLAGS,
        "--model",
        f"openai/{model}",
        "--restore-chat-history",
        "--message",
        prompt,
    ],
    # litellm would otherwise fetch its price list from the internet on start-up.
    env=lambda base, model: {
        "OPENAI_API_BASE": base,
        "OPENAI_API_KEY": "gateway",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    },
    # A fresh, non-empty price cache: aider would otherwise download one from the internet on every start
    # (prices do not matter here: the gateway meters every call).
    files=lambda base, model: {".aider/caches/model_prices_and_context_window.json": '{"staminabench": {}}'},
    parse=_parse,
    history=lambda session: ("../.aider.chat.history.md",),  # in the workspace, which HOME is below
    window=_window,
    caveat="exits 0 when the model call fails, so success is read from its output; context continues through "
    "its chat history file in the workspace (--restore-chat-history)",
)
