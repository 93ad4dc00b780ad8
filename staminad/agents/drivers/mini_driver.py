"""Keeps one mini-swe-agent conversation alive across turns (its CLI cannot continue one).

Runs inside the sandbox with mini-swe-agent importable. Each call loads the agent's messages from
HOME, adds the new prompt as a user message (turn 0: the system and task messages), and runs the agent's
loop until it submits or stops; the messages are saved after every step, so a killed call loses at most
one step. Prints one JSON line for the launcher: session id, exit status and the call's token usage.
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
    start = len(agent.messages)
    agent.add_messages(model.format_message(role="user", content=args.task))

    def save() -> None:
        tmp = state.with_suffix(".tmp")
        tmp.write_text(json.dumps({"session": saved["session"], "messages": agent.messages}, default=str))
        tmp.replace(state)

    crashed = ""
    while True:
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
            save()
        if agent.messages[-1].get("role") == "exit":
            break
    usage_in = usage_out = 0
    for message in agent.messages[start:]:
        usage = ((message.get("extra") or {}).get("response") or {}).get("usage") or {}
        usage_in += usage.get("prompt_tokens") or 0
        usage_out += usage.get("completion_tokens") or 0
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
