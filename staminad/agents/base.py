"""The adapter interface: real harnesses (see `harnesses`) and the built-in deterministic agents.

An adapter says how to run its harness inside a sandbox for a turn-0 prompt and for every later
prompt of the same session, which environment it needs and what state to keep. Built-ins:
`reference`, `mutant:<bug>` (optionally `+fix` to repair after feedback), `fault:<kind>[:once]`
(harness faults: self-kill, hang, crash, hostile; server faults: no-server, server-crash,
accept-close, trickle, slow, huge-response, nested-json, forked-server; and slow-start, a correct
server that is slow to listen; the reference's server hostile to the platform's steps: pid-trick,
teardown-hog, hostile-server; leftover faults, a correct agent leaving hostile things behind as its
harness ends: pid-filler, memory-hog, fork-chains, disk-writer, plant-links, plant-specials; see
`scripts/fault.py` and `scripts/hostile.py`)
and `manual`
(a person, or an outside agent, answers each prompt and runs `staminad done`).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from protocol.usage import close_match, did_you_mean, hint
from staminad.agents.harnesses import HARNESS_ROOT, HARNESSES
from staminad.reference.mutants import MUTANT_BY_BUG
from staminad.sandbox.base import RUNTIME_FILES, SandboxPaths

FAULTS = (
    "self-kill",
    "hang",
    "crash",
    "hostile",
    "no-server",
    "server-crash",
    "accept-close",
    "trickle",
    "slow",
    "huge-response",
    "nested-json",
    "forked-server",
    "slow-start",
    "pid-trick",
    "teardown-hog",
    "hostile-server",
    "pid-filler",
    "memory-hog",
    "fork-chains",
    "disk-writer",
    "plant-links",
    "plant-specials",
)
# The files (below staminad/) each kind of agent runs inside its sandbox: its agent layer, mounted read-only
# at `paths.harness`. Only the built-in agents, which act from the reference code, get the reference code; a
# real harness's sandbox gets its launcher and nothing of the oracle, the suite or the generators.
REFERENCE_FILES = (
    "reference/agent.py",
    "reference/parse.py",
    *sorted(f"reference/server/{p.name}" for p in (Path(__file__).parents[1] / "reference" / "server").glob("*.py")),
)
HARNESS_FILES = (
    "agents/scripts/harness.py",
    *sorted(f"agents/harnesses/{p.name}" for p in (Path(__file__).parent / "harnesses").glob("*.py")),
    "agents/windows.py",
    "agents/drivers/mini_driver.py",
)
VERSION = "builtin-1"


class UnknownAgent(ValueError):
    """An agent name that no adapter answers to."""


class Adapter(msgspec.Struct, frozen=True, kw_only=True):
    """A harness as the engine sees it. `argv` is None for `manual` (nothing to launch)."""

    name: str
    version: str = VERSION
    description: str = ""
    bug: str | None = None
    fix_on_feedback: bool = False
    fault: str | None = None
    once: bool = False
    manual: bool = False
    env: dict[str, str] = {}
    state_paths: tuple[str, ...] = (".reference-agent",)
    harness: str | None = None  # a real harness (see `harnesses.HARNESSES`); it needs the sweep's [llm]
    image: str = ""  # the Docker image its sandbox runs: a harness's own layer; "" is the sweep's [run] image

    def layer(self) -> tuple[str, ...]:
        """The files below staminad/ that this agent's sandbox carries (the runtime's own scripts included)."""
        if self.manual:
            return RUNTIME_FILES
        if self.harness is not None:
            return (*RUNTIME_FILES, *HARNESS_FILES)
        if self.fault is not None:
            return (*RUNTIME_FILES, "agents/scripts/fault.py", "agents/scripts/hostile.py", *REFERENCE_FILES)
        return (*RUNTIME_FILES, *REFERENCE_FILES)

    def argv(self, paths: SandboxPaths, prompt_path: str) -> list[str] | None:
        """The command for one call; the session continues through state kept in the workspace."""
        if self.manual:
            return None
        if self.harness is not None:
            return [
                "python3",
                f"{paths.harness}/agents/scripts/harness.py",
                "--harness",
                self.harness,
                "--workspace",
                paths.workspace,
                "--prompt-file",
                prompt_path,
            ]
        if self.fault is not None:
            cmd = ["python3", f"{paths.harness}/agents/scripts/fault.py", "--fault", self.fault]
            if self.once:
                cmd.append("--once")
            return [*cmd, "--workspace", paths.workspace, "--prompt-file", prompt_path]
        cmd = [
            "python3",
            f"{paths.harness}/reference/agent.py",
            "--workspace",
            paths.workspace,
            "--prompt-file",
            prompt_path,
        ]
        if self.bug:
            cmd += ["--bug", self.bug]
        if self.fix_on_feedback:
            cmd.append("--fix-on-feedback")
        return cmd


def adapter_for(name: str) -> Adapter:
    """The adapter for an agent name such as `reference`, `mutant:no-cascade+fix` or `fault:hang:once`."""
    if name == "reference":
        return Adapter(name=name, description="reads the texts, writes the reference server")
    if name in HARNESSES:
        from staminad.agents.layers import layer_tag

        h = HARNESSES[name]
        return Adapter(
            name=name,
            version=h.version,
            harness=name,
            state_paths=(".home",),
            image=layer_tag(h),
            description=f"{h.install}" + (f"; {h.caveat}" if h.caveat else ""),
            env={"PYTHONPATH": f"{HARNESS_ROOT}/{name}", "STAMINA_HARNESS_BIN": f"{HARNESS_ROOT}/{name}/bin"},
        )
    if name == "manual":
        return Adapter(name=name, manual=True, description=f"a person or outside agent; finish with `{hint('done')}`")
    kind, _, rest = name.partition(":")
    if kind == "mutant":
        bug, fix = (rest[:-4], True) if rest.endswith("+fix") else (rest, False)
        if bug not in MUTANT_BY_BUG:
            if (near := close_match(bug, MUTANT_BY_BUG)) is not None:  # a typo: the one name, not all of them
                raise UnknownAgent(
                    f"unknown mutant {bug!r}; did you mean {near!r}? (`{hint('agents list')}` lists all)"
                )
            raise UnknownAgent(f"unknown mutant {bug!r}; known: {', '.join(MUTANT_BY_BUG)}")
        return Adapter(name=name, bug=bug, fix_on_feedback=fix, description=MUTANT_BY_BUG[bug].description)
    if kind == "fault":
        fault, _, once = rest.partition(":")
        if fault not in FAULTS or once not in ("", "once"):
            near = did_you_mean(name, [f"fault:{f}{o}" for f in FAULTS for o in ("", ":once")])
            raise UnknownAgent(f"unknown fault agent {name!r}{near} (use fault:<{'|'.join(FAULTS)}>[:once])")
        return Adapter(name=name, fault=fault, once=bool(once), description=f"injects {fault}")
    names = [
        *HARNESSES,
        "reference",
        "manual",
        *(f"mutant:{b}" for b in MUTANT_BY_BUG),
        *(f"fault:{f}" for f in FAULTS),
    ]
    if (near := close_match(name, names)) is not None:
        raise UnknownAgent(f"unknown agent {name!r}; did you mean {near!r}? (`{hint('agents list')}` lists all)")
    raise UnknownAgent(
        f"unknown agent {name!r}: use a harness ({', '.join(HARNESSES)}), reference, manual, "
        "mutant:<bug>[+fix] or fault:<kind>[:once]"
    )


def list_adapters() -> list[Adapter]:
    out = [adapter_for(name) for name in HARNESSES]
    out += [adapter_for("reference"), adapter_for("manual")]
    out += [adapter_for(f"mutant:{bug}") for bug in MUTANT_BY_BUG]
    out += [adapter_for(f"fault:{f}") for f in FAULTS]
    return out
