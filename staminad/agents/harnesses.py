"""What staminabench knows about each real coding-agent harness: install pin, command lines, config, output.

Standard library only: the launcher (`scripts/harness.py`) imports this inside the sandbox. For each
harness: the command for the first call of a session and for continuing that same session (agents keep
their context across turns; that is what is measured), the environment and config files that point it
at the gateway's base URL, and a parser that reads its output for the session id, success (several exit
0 on failure) and token usage. Stdin is always closed and permission prompts bypassed by the launcher
and these flags, so nothing waits for a person.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

HARNESS_ROOT = "/opt/harnesses"  # where harness image layers install each harness (its own dir per name)


@dataclass(frozen=True)
class Report:
    session: str = ""
    ok: bool = True
    input_tokens: int = 0
    output_tokens: int = 0
    error: str = ""


@dataclass(frozen=True)
class Harness:
    name: str
    version: str
    install: str  # the pinned package the image layer installs
    first: Callable[[str, str], list[str]]  # (prompt, model) -> argv
    resume: Callable[[str, str, str], list[str]]  # (prompt, model, session) -> argv
    env: Callable[[str, str], dict[str, str]]  # (base_url, model) -> environment
    parse: Callable[[str, str, int], Report]  # (stdout, stderr, exit code) -> report
    files: Callable[[str, str], dict[str, str]] = lambda base, model: {}  # HOME-relative config files
    caveat: str = ""
    keys: tuple[str, ...] = field(default=())  # environment variables it reads an API key from
    # (path in the installed package tree, path in the layer): when set, the layer carries only these files
    # (a package that merely bundles the harness's binary, such as Claude Code's in the Agent SDK wheel).
    carry: tuple[tuple[str, str], ...] = field(default=())
    # HOME-relative glob patterns of the files a session's history is appended to (session id -> patterns): a
    # call the harness itself failed is cut from them, so the infra retry resumes the session as it was; a
    # pattern that names a directory (a session store the harness rewrites) is put back whole instead.
    history: Callable[[str], tuple[str, ...]] = lambda session: ()
    base: str = "bookworm"  # the Debian suite of the base image its layer goes on (its Python's version)
    # HOME-relative glob patterns of the file the harness keeps its session or trajectory in (the newest is
    # the transcript the monitor shows; `staminad.agents.transcripts` reads each kind); () when none is read.
    transcript: tuple[str, ...] = field(default=())
    # The one wire protocol it talks to its model in (`staminad.engine.models.PROTOCOLS`): a sweep pairing it
    # with a model that does not serve this is refused before it starts.
    protocol: str = "openai-chat"


def _json_lines(text: str) -> list[dict[str, object]]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
    return out


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def _dict(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


# --- mini-swe-agent (through staminabench's session driver) ---------------------------------------


def _mini_parse(out: str, err: str, code: int) -> Report:
    lines = [d for d in _json_lines(out) if d.get("driver") == "staminabench-mini"]
    if not lines:
        return Report(ok=False, error=(err.strip().splitlines() or ["no report from the driver"])[-1])
    last = lines[-1]
    crashed = str(last.get("crashed") or "")
    return Report(
        session=str(last.get("session", "")),
        ok=not crashed,
        input_tokens=_int(last.get("input_tokens")),
        output_tokens=_int(last.get("output_tokens")),
        error=crashed or ("" if last.get("exit_status") == "Submitted" else str(last.get("exit_status"))),
    )


MINI = Harness(
    name="mini-swe-agent",
    version="2.4.6",
    install="pypi:mini-swe-agent==2.4.6 litellm==1.80.0",
    first=lambda prompt, model: ["mini-driver", "--model", model, "--task", prompt],
    resume=lambda prompt, model, session: ["mini-driver", "--model", model, "--task", prompt],
    env=lambda base, model: {
        "OPENAI_API_BASE": base,
        "OPENAI_BASE_URL": base,
        "OPENAI_API_KEY": "gateway",
        "MSWEA_SILENT_STARTUP": "1",
        "MSWEA_COST_TRACKING": "ignore_errors",
        # The gateway waits out outages; the harness's own retries would only add to it.
        "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    },
    parse=_mini_parse,
    history=lambda session: (".staminabench/mini",),  # the driver's whole session store, the first call's too
    transcript=(".staminabench/mini/session.json",),
    caveat="its CLI cannot continue a conversation, so a small driver keeps the agent's messages in HOME and "
    "resumes them on every call",
)


# --- Claude Code --------------------------------------------------------------------------------


def _claude_parse(out: str, err: str, code: int) -> Report:
    events = _json_lines(out)
    results = [d for d in events if d.get("type") == "result"]
    session = next((str(d["session_id"]) for d in events if "session_id" in d), "")
    if not results:
        return Report(session=session, ok=False, error=(err.strip().splitlines() or ["no result event"])[-1])
    r = results[-1]
    usage = _dict(r.get("usage"))
    tokens_in = (
        _int(usage.get("input_tokens"))
        + _int(usage.get("cache_read_input_tokens"))
        + _int(usage.get("cache_creation_input_tokens"))
    )
    # An API error still ends with subtype "success": only is_error (and terminal_reason) tell.
    ok = not r.get("is_error") and r.get("subtype") == "success"
    error = "" if ok else str(r.get("result") or r.get("terminal_reason") or r.get("subtype"))[:300]
    return Report(
        session=str(r.get("session_id", session)),
        ok=ok,
        input_tokens=tokens_in,
        output_tokens=_int(usage.get("output_tokens")),
        error=error,
    )


_CLAUDE_FLAGS = ["--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"]
CLAUDE = Harness(
    # The real `claude` binary (Claude Code 2.1.332) as bundled in the Agent SDK's manylinux wheel; checked
    # with `pip index versions claude-agent-sdk` on 2026-12-01 (0.2.189 newest).
    name="claude-code",
    protocol="anthropic-messages",
    version="2.1.332",
    install="pypi:claude-agent-sdk==0.2.189",
    carry=(("claude_agent_sdk/_bundled/claude", "bin/claude"),),
    history=lambda session: (f".claude/projects/*/{session}.jsonl",) if session else (),
    transcript=(".claude/projects/*/*.jsonl",),
    first=lambda prompt, model: ["claude", "-p", prompt, "--model", model, *_CLAUDE_FLAGS],
    resume=lambda prompt, model, session: [
        "claude",
        "-p",
        prompt,
        "--model",
        model,
        "--resume",
        session,
        *_CLAUDE_FLAGS,
    ],
    env=lambda base, model: {
        "ANTHROPIC_BASE_URL": base.removesuffix("/v1"),
        "ANTHROPIC_API_KEY": "gateway",
        # Without these it resolves api.anthropic.com (telemetry, feature flags), which
        # the sealed network drops.
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # It retries 5xx itself for minutes; the gateway owns waiting out outages.
        "CLAUDE_CODE_MAX_RETRIES": "0",
    },
    parse=_claude_parse,
    keys=("ANTHROPIC_API_KEY",),
    caveat="speaks the Anthropic messages API: the [llm] endpoint must accept it (the gateway passes it through); "
    "an API error ends with subtype success and is_error true (exit 1), so success is read from is_error",
)


# --- Codex CLI ----------------------------------------------------------------------------------


def _codex_parse(out: str, err: str, code: int) -> Report:
    events = _json_lines(out)
    session = next((str(e.get("thread_id")) for e in events if e.get("type") == "thread.started"), "")
    tin = tout = 0
    for e in events:
        if e.get("type") == "turn.completed":
            usage = _dict(e.get("usage"))
            tin += _int(usage.get("input_tokens"))
            tout += _int(usage.get("output_tokens"))
    # An `item.completed` of type error (say "Model metadata for X not found") is a warning; these end the turn.
    failed = [e for e in events if e.get("type") in ("turn.failed", "error")]
    error = str(_dict(failed[-1].get("error")).get("message") or failed[-1].get("message")) if failed else ""
    if not failed and not any(e.get("type") == "turn.completed" for e in events):
        error = (err.strip().splitlines() or [f"exit {code} without turn.completed"])[-1]
    return Report(session=session, ok=code == 0 and not error, input_tokens=tin, output_tokens=tout, error=error)


# No approvals, no codex sandbox (bubblewrap/landlock need user namespaces the container does not grant;
# the container is the sandbox), no git repository needed; --strict-config fails loudly if a key below is
# not this version's.
_CODEX_FLAGS = ["--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--strict-config"]


def _codex_config(base: str, model: str) -> str:
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


CODEX = Harness(
    name="codex",
    protocol="openai-responses",
    version="0.163.0",
    install="pypi:openai-codex-cli-bin==0.163.0",
    first=lambda prompt, model: ["codex", "exec", *_CODEX_FLAGS, "-m", model, prompt],
    resume=lambda prompt, model, session: ["codex", "exec", "resume", *_CODEX_FLAGS, "-m", model, session, prompt],
    env=lambda base, model: {"STAMINABENCH_KEY": "gateway", "CODEX_HOME": ".codex"},
    files=lambda base, model: {".codex/config.toml": _codex_config(base, model)},
    parse=_codex_parse,
    # `exec resume` appends the call to the thread's rollout file (a failed first call's thread is never resumed).
    history=lambda session: (f".codex/sessions/*/*/*/rollout-*-{session}.jsonl",) if session else (),
    transcript=(".codex/sessions/*/*/*/rollout-*.jsonl",),  # CODEX_HOME is HOME/.codex
    caveat="speaks the OpenAI Responses API (the gateway passes /v1/responses); a model name codex does not "
    "know runs on fallback metadata without its apply_patch tool",
)


# --- OpenCode -----------------------------------------------------------------------------------


def _opencode_parse(out: str, err: str, code: int) -> Report:
    events = _json_lines(out)
    session = next((str(e.get("sessionID")) for e in events if e.get("sessionID")), "")
    tin = tout = 0
    error = ""
    for e in events:
        part = _dict(e.get("part"))
        if e.get("type") == "step_finish":
            tokens = _dict(part.get("tokens"))
            tin += _int(tokens.get("input")) + _int(_dict(tokens.get("cache")).get("read"))
            tout += _int(tokens.get("output"))
        if e.get("type") == "error":
            error = str(_dict(e.get("error")).get("message") or "error")
    return Report(session=session, ok=code == 0 and not error, input_tokens=tin, output_tokens=tout, error=error)


OPENCODE = Harness(
    # The paper's version (its table 9); npm only, so its layer cannot be built on this machine.
    name="opencode",
    version="1.4.3",
    install="npm:opencode-ai@1.4.3",
    first=lambda prompt, model: ["opencode", "run", "--format", "json", "-m", f"staminabench/{model}", prompt],
    resume=lambda prompt, model, session: [
        "opencode",
        "run",
        "--format",
        "json",
        "-m",
        f"staminabench/{model}",
        "--session",
        session,
        prompt,
    ],
    env=lambda base, model: {"OPENCODE_CONFIG": ".config/opencode/opencode.json", "OPENCODE_DISABLE_AUTOUPDATE": "1"},
    files=lambda base, model: {
        ".config/opencode/opencode.json": json.dumps(
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
    },
    parse=_opencode_parse,
    # 1.x keeps every session in one store (opencode.db and storage/ under its data directory): put back whole.
    history=lambda session: (".local/share/opencode",),
    caveat="npm only (opencode-ai), unreachable here: its layer must be built on a host that reaches npm; "
    "parser and command lines checked against its documented `run --format json` events",
)


# --- Qwen Code (a Gemini CLI fork) --------------------------------------------------------------


def _qwen_messages(out: str) -> list[dict[str, object]]:
    """Its `--output-format json` output: an array of messages (0.10 on; older releases printed one object)."""
    start = min((k for k in (out.find("["), out.find("{")) if k >= 0), default=-1)
    if start < 0:
        return []
    try:
        data = json.loads(out[start:])
    except ValueError:
        return _json_lines(out)
    items = data if isinstance(data, list) else [data]
    return [m for m in items if isinstance(m, dict)]


def _qwen_parse(out: str, err: str, code: int) -> Report:
    messages = _qwen_messages(out)
    results = [m for m in messages if m.get("type") == "result"]
    session = next((str(m["session_id"]) for m in messages if m.get("session_id")), "")
    if results:  # the array: a result message like Claude Code's, usage in it
        r = results[-1]
        usage = _dict(r.get("usage"))
        ok = code == 0 and not r.get("is_error") and r.get("subtype") == "success"
        tin = _int(usage.get("input_tokens")) + _int(usage.get("cache_read_input_tokens"))
        error = "" if ok else str(_dict(r.get("error")).get("message") or r.get("result") or f"exit {code}")[:300]
        tout = _int(usage.get("output_tokens"))
        return Report(session=session, ok=ok, input_tokens=tin, output_tokens=tout, error=error)
    data = next((m for m in messages if "stats" in m or "response" in m or "error" in m), {})
    stats = _dict(data.get("stats"))
    tin = tout = 0
    for model in _dict(stats.get("models")).values():
        tokens = _dict(_dict(model).get("tokens"))
        tin += _int(tokens.get("prompt"))
        tout += _int(tokens.get("candidates"))
    error = str(_dict(data.get("error")).get("message") or "")
    if not data:
        error = (err.strip().splitlines() or ["no JSON result"])[-1]
    return Report(
        session=str(data.get("session_id", session)),
        ok=code == 0 and not error and bool(data),
        input_tokens=tin,
        output_tokens=tout,
        error=error,
    )


QWEN = Harness(
    # The paper's version (its table 9); npm only, so its layer cannot be built on this machine.
    name="qwen-code",
    version="0.10.5",
    install="npm:@qwen-code/qwen-code@0.10.5",
    first=lambda prompt, model: ["qwen", "-p", prompt, "-m", model, "--yolo", "--output-format", "json"],
    resume=lambda prompt, model, session: [
        "qwen",
        "-p",
        prompt,
        "-m",
        model,
        "--yolo",
        "--output-format",
        "json",
        "--resume",
        session,
    ],
    env=lambda base, model: {"OPENAI_BASE_URL": base, "OPENAI_API_KEY": "gateway", "OPENAI_MODEL": model},
    # Headless, it must be told to use the OpenAI-compatible endpoint (no /auth dialogue can run).
    files=lambda base, model: {
        ".qwen/settings.json": json.dumps({"security": {"auth": {"selectedType": "openai"}}, "model": {"name": model}})
    },
    parse=_qwen_parse,
    # Sessions are JSONL under ~/.qwen/projects/<cwd>/chats, one file per session, appended to.
    history=lambda session: (f".qwen/projects/*/chats/{session}.jsonl",) if session else (),
    caveat="npm only (@qwen-code/qwen-code), unreachable here: its layer must be built on a host that reaches "
    "npm; `--output-format json` prints an array of messages ending in a result message",
)


# --- Kimi CLI, Mistral Vibe (JSON-lines printers, on the trixie base) -----------------------------

_KIMI_SESSION = re.compile(r"To resume this session: kimi -r (\S+)")


def _kimi_parse(out: str, err: str, code: int) -> Report:
    # --print --output-format stream-json prints the messages (no usage: the gateway meters); the session
    # id is only in its closing stderr line.
    found = _KIMI_SESSION.findall(err)
    answered = any(m.get("role") == "assistant" and not m.get("tool_calls") for m in _json_lines(out))
    ok = code == 0 and answered
    error = "" if ok else (err.strip().splitlines() or [f"exit {code}, no answer"])[-1]
    return Report(session=found[-1] if found else "", ok=ok, error=error)


KIMI = Harness(
    name="kimi-cli",
    version="1.51.0",
    install="pypi:kimi-cli==1.51.0 lxml-html-clean==0.4.3",
    base="trixie",
    first=lambda prompt, model: [
        "kimi",
        "--print",
        "--output-format",
        "stream-json",
        "--yolo",
        "-m",
        model,
        "-c",
        prompt,
    ],
    resume=lambda prompt, model, session: [
        "kimi",
        "--print",
        "--output-format",
        "stream-json",
        "--yolo",
        "-m",
        model,
        "--session",
        session,
        "-c",
        prompt,
    ],
    env=lambda base, model: {"KIMI_BASE_URL": base, "KIMI_API_KEY": "gateway", "KIMI_MODEL_NAME": model},
    parse=_kimi_parse,
    history=lambda session: (f".kimi/sessions/*/{session}",) if session else (),
    transcript=(".kimi/sessions/*/*/context.jsonl",),  # <md5 of the work dir>/<session id>/
    caveat="upstream stopped it for the Kimi Code CLI: 1.52.0 only prints that notice and exits 0 on every "
    "command (with no arguments it fetches an installer), so the last working release is pinned; its web "
    "tools need lxml-html-clean, which its dependencies leave out",
)


def _vibe_parse(out: str, err: str, code: int) -> Report:
    # `--output streaming` prints the session's entries as they settle (camelCase, no token usage: the
    # gateway meters); an API error after its own retries ends it with exit 2 and "Error: ..." on stderr.
    entries = _json_lines(out)
    session = next((str(e["sessionId"]) for e in entries if e.get("sessionId")), "")
    answered = any(
        e.get("type") == "message" and e.get("role") == "assistant" and e.get("generationStatus") == "completed"
        for e in entries
    )
    problems = [line for line in err.splitlines() if line.startswith("Error:")]
    ok = code == 0 and answered and not problems
    error = "" if ok else (problems or err.strip().splitlines() or [f"exit {code}, no answer"])[-1]
    return Report(session=session, ok=ok, error=error)


VIBE = Harness(
    name="mistral-vibe",
    version="3.0.2",
    install="pypi:mistral-vibe==3.0.2",
    base="trixie",
    # Its session store is rewritten (snapshots, journal) on every call, a failed one too: kept and put back.
    history=lambda session: (f".vibe/logs/session/unified/{session}",) if session else (),
    transcript=(".vibe/logs/session/unified/*/CURRENT",),  # the pointer to the session's latest generation
    first=lambda prompt, model: ["vibe", "-p", prompt, "--output", "streaming", "--auto-approve"],
    resume=lambda prompt, model, session: [
        "vibe",
        "-p",
        prompt,
        "--output",
        "streaming",
        "--auto-approve",
        "--resume",
        session,
    ],
    env=lambda base, model: {"VIBE_HOME": ".vibe", "STAMINABENCH_KEY": "gateway"},
    files=lambda base, model: {
        ".vibe/config.toml": (
            f'active_model = "{model}"\nenable_telemetry = false\nenable_update_checks = false\n'
            "enable_auto_update = false\napi_retry_max_elapsed_time = 0\n\n"
            f'[[providers]]\nname = "staminabench"\napi_base = "{base}"\n'
            'api_key_env_var = "STAMINABENCH_KEY"\nbackend = "generic"\n\n[[models]]\n'
            f'name = "{model}"\nprovider = "staminabench"\nalias = "{model}"\n'
        )
    },
    parse=_vibe_parse,
    caveat="Chat Completions with tool calls; its own API retries are off (they ran past 3 minutes on a 500); "
    "token usage is not printed, the gateway meters it",
)


# --- OpenHands (headless, on trixie's Python 3.13: see staminad.sandbox.pyceiling) ----------------

_OPENHANDS_EVENT = "--JSON Event--"  # `--json` prints each event as indented JSON after this line
_OPENHANDS_ID = re.compile(r"Conversation ID: ([0-9a-f]{32})")


def _openhands_events(out: str) -> list[dict[str, object]]:
    """The events `--headless --json` printed (a torn or foreign block is skipped)."""
    events = []
    for block in out.split(_OPENHANDS_EVENT)[1:]:
        try:
            value, _ = json.JSONDecoder().raw_decode(block.lstrip())
        except ValueError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


def _openhands_parse(out: str, err: str, code: int) -> Report:
    # No token usage is printed (the gateway meters). A failed run still exits 0 after "Goodbye!": its
    # ConversationErrorEvent (the LLM call failed, the iteration limit hit) tells, and a run must end on the
    # agent's own word (its finish action or a message without tool calls).
    events = _openhands_events(out)
    found = _OPENHANDS_ID.findall(out)
    failed = [e for e in events if e.get("kind") == "ConversationErrorEvent"]
    agent = [e for e in events if e.get("source") == "agent"]
    finished = bool(agent) and (
        agent[-1].get("kind") == "MessageEvent" or _dict(agent[-1].get("action")).get("kind") == "FinishAction"
    )
    if failed:
        error = f"{failed[-1].get('code')}: {failed[-1].get('detail')}"[:300]
    elif not finished:
        error = (err.strip().splitlines() or [f"exit {code} before the agent finished"])[-1]
    else:
        error = "" if code == 0 else f"exit {code}"
    return Report(session=found[-1] if found else "", ok=not error, error=error)


_OPENHANDS_FLAGS = ["--headless", "--json", "--always-approve", "--override-with-envs"]
OPENHANDS = Harness(
    # The paper's version; the CLI's own wheel asks for Python 3.12 exactly (see staminad.sandbox.pyceiling).
    name="openhands",
    version="1.12.1",
    install="pypi:openhands==1.12.1",
    base="trixie",
    first=lambda prompt, model: ["openhands", *_OPENHANDS_FLAGS, "-t", prompt],
    resume=lambda prompt, model, session: ["openhands", *_OPENHANDS_FLAGS, "--resume", session, "-t", prompt],
    # Read only with --override-with-envs (else the settings in HOME, which a sandbox has none of); litellm
    # would otherwise fetch its price list from the internet on start-up.
    env=lambda base, model: {
        "LLM_BASE_URL": base,
        "LLM_API_KEY": "gateway",
        "LLM_MODEL": f"openai/{model}",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    },
    parse=_openhands_parse,
    transcript=(".openhands/conversations/*/events/event-*.json",),  # one file per event
    caveat="its CLI wheel declares Python ==3.12.*, which no base ships: it runs on trixie's 3.13 with that "
    "ceiling alone ignored (its SDK and tools ask >=3.12); a failed run exits 0, so success is read from its "
    "events; token usage is not printed, the gateway meters it",
)


# --- Aider --------------------------------------------------------------------------------------

_TOKENS = re.compile(r"Tokens: ([\d.]+)(k?) sent(?:, [\d.]+k? cache (?:write|hit))*, ([\d.]+)(k?) received")


def _count(number: str, k: str) -> int:
    return int(float(number) * (1000 if k else 1))


def _aider_parse(out: str, err: str, code: int) -> Report:
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


_AIDER_FLAGS = [
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
AIDER = Harness(
    name="aider",
    version="0.86.2",
    install="pypi:aider-chat==0.86.2",
    first=lambda prompt, model: ["aider", *_AIDER_FLAGS, "--model", f"openai/{model}", "--message", prompt],
    resume=lambda prompt, model, session: [
        "aider",
        *_AIDER_FLAGS,
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
    parse=_aider_parse,
    history=lambda session: ("../.aider.chat.history.md",),  # in the workspace, which HOME is below
    caveat="exits 0 when the model call fails, so success is read from its output; context continues through "
    "its chat history file in the workspace (--restore-chat-history)",
)

HARNESSES = {h.name: h for h in (MINI, CLAUDE, CODEX, OPENCODE, QWEN, KIMI, VIBE, OPENHANDS, AIDER)}
