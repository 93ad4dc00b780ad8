"""Keeps one mini-swe-agent conversation alive across turns (its CLI cannot continue one).

Runs inside the sandbox with mini-swe-agent importable. Each call loads the agent's messages from
HOME, adds the new prompt as a user message (turn 0: the system and task messages), and runs the agent's
loop until it submits or stops; the messages are saved after every step, so a killed call loses at most
one step. Prints one JSON line for the launcher: session id, exit status and the call's token usage.

Like the paper's modified mini-swe-agent, it compacts its context: when the conversation's estimated size
passes a share (STAMINA_MINI_COMPACT_AT, 0.8) of the model's context window (STAMINA_MINI_CONTEXT_WINDOW, set
from the sweep's model; no window, no compaction), the older steps are replaced by a summary the model writes
(one call through the gateway, metered like the rest and marked with a header so the attempt records that it
compacted), keeping the system prompt, the first task, the current
prompt and the most recent steps. If the summary call fails they are dropped with a note instead.
"""

# mypy: ignore-errors
# (mini-swe-agent is installed only in the harness image layer, not in the project's environment)
import argparse
import json
import os
import sys
import uuid
from pathlib import Path

SYSTEM = """You are a careful software engineer working in a Linux shell. Every reply must call the `bash` tool
exactly once with the next command to run. The working directory is the project. When the task is done, run
`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` on its own; nothing after it runs."""


SUMMARY = """Summarise the conversation so far for yourself, to continue the work after the older messages
are removed: the task and every change requested, what was done and where (files, functions), how the project is
run and tested, what is still open. Be specific and complete; do not call any tool."""
RECENT = 6  # messages kept whole at the end of the conversation
COMPACTION_HEADER = "x-staminabench-compaction"  # staminad.gateway.proxy.COMPACTION_HEADER (not importable here)


def estimate(messages: list[dict]) -> int:
    """The conversation's size in tokens, estimated from its characters (about four a token)."""
    return (
        sum(
            len(json.dumps(m.get("content"), default=str)) + len(json.dumps(m.get("tool_calls") or ""))
            for m in messages
        )
        // 4
    )


def compact(messages: list[dict], current: int, summarise) -> list[dict]:
    """The conversation with its older middle replaced by a summary (`summarise(middle) -> str`, which may raise).

    Kept: the system prompt and first task (the first two messages), the current turn's prompt (`current`) and
    the last RECENT messages, the tail never starting inside a tool call's results.
    """
    tail = max(2, len(messages) - RECENT)
    while tail > 2 and messages[tail].get("role") == "tool":
        tail -= 1  # a tool result belongs with the assistant message that called it
    middle = [m for i, m in enumerate(messages[2:tail], start=2) if i != current]
    if not middle:
        return messages
    try:
        note = "Summary of the earlier conversation (older messages were removed to fit the context window):\n"
        note += summarise(messages[:tail])
    except Exception as exc:  # noqa: BLE001 - the summary is a help, not a must: drop the middle with a note
        note = f"({len(middle)} earlier messages were removed to fit the context window; no summary: {exc})"
    kept = [*messages[:2], {"role": "user", "content": note}]
    if 2 <= current < tail:
        kept.append(messages[current])
    return [*kept, *messages[tail:]]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--task", required=True)
    ap.add_argument("--step-limit", type=int, default=int(os.environ.get("STAMINA_MINI_STEP_LIMIT", "60")))
    args = ap.parse_args()
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.exceptions import FormatError, InterruptAgentFlow
    from minisweagent.models.litellm_model import LitellmModel

    state_dir = Path(os.environ["HOME"]) / ".staminabench" / "mini"
    state_dir.mkdir(parents=True, exist_ok=True)
    state = state_dir / "session.json"
    saved = json.loads(state.read_text()) if state.exists() else {"session": uuid.uuid4().hex, "messages": []}
    base = os.environ["OPENAI_API_BASE"]
    model = LitellmModel(
        model_name=f"openai/{args.model}",
        cost_tracking="ignore_errors",
        model_kwargs={"api_base": base, "api_key": os.environ.get("OPENAI_API_KEY", "gateway")},
    )
    env = LocalEnvironment(cwd=os.getcwd(), timeout=300)
    agent = DefaultAgent(
        model, env, system_template=SYSTEM, instance_template="{{task}}", step_limit=args.step_limit, cost_limit=0
    )
    agent.extra_template_vars |= {"task": args.task}
    # The exit message that ended the previous call is bookkeeping, not conversation: drop it.
    agent.messages = [m for m in saved["messages"] if m.get("role") != "exit"]
    if not agent.messages:
        agent.add_messages(model.format_message(role="system", content=SYSTEM))
    agent.add_messages(model.format_message(role="user", content=args.task))
    current = len(agent.messages) - 1
    window = int(os.environ.get("STAMINA_MINI_CONTEXT_WINDOW") or 0)
    limit = window * float(os.environ.get("STAMINA_MINI_COMPACT_AT") or 0.8)
    usage = {"prompt_tokens": 0, "completion_tokens": 0}

    def count(reply: dict) -> None:
        for key in usage:
            usage[key] += int(reply.get(key) or 0)

    def summarise(older: list[dict]) -> str:
        import litellm

        # Only what the API takes (mini keeps its own bookkeeping under `extra`), then the request for a summary.
        plain = [{k: v for k, v in m.items() if k != "extra"} for m in older]
        asked = [*plain, {"role": "user", "content": SUMMARY}]
        reply = litellm.completion(
            model=f"openai/{args.model}",
            messages=asked,
            api_base=base,
            api_key=os.environ.get("OPENAI_API_KEY"),
            extra_headers={COMPACTION_HEADER: "1"},  # the gateway records this call as the attempt's compaction
        )
        used = getattr(reply, "usage", None)
        count({key: getattr(used, key, 0) for key in usage})
        return str(reply.choices[0].message.content or "")

    def save() -> None:
        tmp = state.with_suffix(".tmp")
        tmp.write_text(json.dumps({"session": saved["session"], "messages": agent.messages}, default=str))
        tmp.replace(state)

    crashed = ""
    while True:
        seen = len(agent.messages)
        try:
            agent.step()
        except FormatError as exc:
            agent.add_messages(*exc.messages)
        except InterruptAgentFlow as exc:
            agent.add_messages(*exc.messages)
        except Exception as exc:  # noqa: BLE001 - the model or the loop failed: the launcher reports a harness failure
            crashed = f"{type(exc).__name__}: {exc}"
            agent.add_messages({"role": "exit", "content": crashed, "extra": {"exit_status": type(exc).__name__}})
        finally:
            for message in agent.messages[seen:]:
                count(((message.get("extra") or {}).get("response") or {}).get("usage") or {})
            save()
        if agent.messages[-1].get("role") == "exit":
            break
        if window and estimate(agent.messages) > limit:
            prompt = agent.messages[current]
            agent.messages = compact(agent.messages, current, summarise)
            current = next((i for i, m in enumerate(agent.messages) if m is prompt), 1)
            save()
    usage_in, usage_out = usage["prompt_tokens"], usage["completion_tokens"]
    status = agent.messages[-1].get("extra", {}).get("exit_status", "")
    print(
        json.dumps(
            {
                "driver": "staminabench-mini",
                "session": saved["session"],
                "exit_status": status,
                "crashed": crashed,
                "input_tokens": usage_in,
                "output_tokens": usage_out,
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
