"""Codex CLI (`codex exec`), on the OpenAI Responses API, configured through $CODEX_HOME/config.toml.

Its `--json` events carry the thread id and per-turn usage; its rollout JSONL is the session's history and the
transcript. The binary comes bundled in a PyPI wheel, linked into the layer's bin/.
"""

from __future__ import annotations

from collections.abc import Iterator

from ._kit import Harness, Layer, Report, TranscriptReader, Turn, as_dict, as_int, as_str, json_lines, texts, turn


def _parse(out: str, err: str, code: int) -> Report:
    events = json_lines(out)
    session = next((str(e.get("thread_id")) for e in events if e.get("type") == "thread.started"), "")
    tin = tout = 0
    for e in events:
        if e.get("type") == "turn.completed":
            usage = as_dict(e.get("usage"))
            tin += as_int(usage.get("input_tokens"))
            tout += as_int(usage.get("output_tokens"))
    # An `item.completed` of type error (say "Model metadata for X not found") is a warning; these end the turn.
    failed = [e for e in events if e.get("type") in ("turn.failed", "error")]
    error = str(as_dict(failed[-1].get("error")).get("message") or failed[-1].get("message")) if failed else ""
    if not failed and not any(e.get("type") == "turn.completed" for e in events):
        error = (err.strip().splitlines() or [f"exit {code} without turn.completed"])[-1]
    return Report(session=session, ok=code == 0 and not error, input_tokens=tin, output_tokens=tout, error=error)


_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _turns(text: str, cut: bool) -> Iterator[Turn]:
    """$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl: `response_item` records around Responses items."""
    for record in json_lines(text):
        item = record.get("payload")
        if record.get("type") != "response_item" or not isinstance(item, dict):
            continue  # session_meta, turn_context, event_msg (the same turns again, as UI events)
        kind = item.get("type")
        if kind == "message":
            yield turn(item.get("role"), texts(item.get("content"), ("input_text", "output_text", "text")))
        elif kind in _CALLS:
            yield turn("assistant", "", [as_str(item.get("name")) or "shell"])
        elif kind in _OUTPUTS:
            output = item.get("output")
            yield turn("tool", output if isinstance(output, str) else as_str(as_dict(output).get("content")))


# No approvals, no codex sandbox (bubblewrap/landlock need user namespaces the container does not grant;
# the container is the sandbox), no git repository needed; --strict-config fails loudly if a key below is
# not this version's.
_FLAGS = ["--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--strict-config"]
_CONFIG = ".codex/config.toml"


def _config(base: str, model: str) -> str:
    # Retries are the gateway's (it waits out outages); web search and the plugin/app/update features
    # would reach openai.com, chatgpt.com and github.com, which a sealed sandbox cannot.
    return (
        'model_provider = "staminabench"\ncheck_for_update_on_startup = false\nweb_search = "disabled"\n\n'
        "[features]\nplugins = false\napps = false\nremote_plugin = false\ntool_suggest = false\n"
        "in_app_updates = false\nskill_mcp_dependency_install = false\ndaemon_auto_start = false\n\n"
        "[analytics]\nenabled = false\n\n"
        '[model_providers.staminabench]\nname = "staminabench gateway"\n'
        f'base_url = "{base}"\nenv_key = "STAMINABENCH_KEY"\nwire_api = "responses"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n"
    )


def _window(model: str, tokens: int, limit: int, at: float, env: dict[str, str], files: dict[str, str]) -> None:
    """`model_context_window`; compaction at `model_auto_compact_token_limit` (tokens)."""
    # Root keys must come before the first table; the file starts with root keys, so these go first.
    files[_CONFIG] = f"model_context_window = {tokens}\nmodel_auto_compact_token_limit = {limit}\n" + files[_CONFIG]


HARNESS = Harness(
    name="codex",
    protocol="openai-responses",
    version="0.163.0",
    layer=Layer(install="pypi:openai-codex-cli-bin==0.163.0", bins=(("codex", "codex_cli_bin/bin/codex"),)),
    first=lambda prompt, model: ["codex", "exec", *_FLAGS, "-m", model, prompt],
    resume=lambda prompt, model, session: ["codex", "exec", "resume", *_FLAGS, "-m", model, session, prompt],
    env=lambda base, model: {"STAMINABENCH_KEY": "gateway", "CODEX_HOME": ".codex"},
    files=lambda base, model: {_CONFIG: _config(base, model)},
    parse=_parse,
    # `exec resume` appends the call to the thread's rollout file (a failed first call's thread is never resumed).
    history=lambda session: (f".codex/sessions/*/*/*/rollout-*-{session}.jsonl",) if session else (),
    transcript=TranscriptReader(patterns=(".codex/sessions/*/*/*/rollout-*.jsonl",), parse=_turns),  # CODEX_HOME
    shell=("exec_command", "cmd"),
    window=_window,
    caveat="speaks the OpenAI Responses API (the gateway passes /v1/responses); a model name codex does not "
    "know runs on fallback metadata without its apply_patch tool",
)
