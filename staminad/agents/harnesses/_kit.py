"""The record each harness module fills in, and the small parsing helpers they share.

A harness is one `Harness` value in one module of this package: how to launch it (its recipe: command lines,
environment, config files, its output parser, history to put back, its context-window settings), what its
image layer holds (`Layer`: the pinned install and what the sandbox's layer build needs beyond it) and how
its transcript is read (`TranscriptReader`). Standard library only: the launcher (`scripts/harness.py`)
imports this package inside the sandbox, where nothing but the base image's Python is installed; the
readers get their bounded file access handed in (`Files`), so none of them opens a file itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

HARNESS_ROOT = "/opt/harnesses"  # where harness image layers install each harness (its own dir per name)


@dataclass(frozen=True)
class Report:
    """What one call's output says: the session to continue, success, token usage (0 when not printed)."""

    session: str = ""
    ok: bool = True
    input_tokens: int = 0
    output_tokens: int = 0
    error: str = ""


@dataclass(frozen=True)
class Layer:
    """What a harness's image layer holds: the pinned install on a Debian base, and what fetching it needs."""

    install: str  # "pypi:PKG==V [MORE==V ...]" or "npm:PKG@V": the pinned packages the layer installs
    base: str = "bookworm"  # the Debian suite of the base image it goes on (its Python's version)
    # When set: the first pinned package without its dependencies, then these (its full dependency list
    # pulls in UIs and datasets it does not need to run).
    deps: tuple[str, ...] = ()
    # Commands its package ships as a bundled binary rather than a console script: (bin/NAME, path in the tree).
    bins: tuple[tuple[str, str], ...] = ()
    # Pure-Python dependencies published only as source: built into wheels before the download.
    sdists: tuple[str, ...] = ()
    # (path in the installed package tree, path in the layer): when set, the layer carries only these files
    # (a package that merely bundles the harness's binary, such as Claude Code's in the Agent SDK wheel).
    carry: tuple[tuple[str, str], ...] = ()
    # (its own wheel's file-name prefix, the Requires-Python it declares): that ceiling alone is ignored
    # (`staminad.sandbox.docker.wheelset`); the release's lock, if any, is `staminad/sandbox/docker/locks/NAME.json`.
    ceiling: tuple[str, str] | None = None


class Turn(NamedTuple):
    """One item of a transcript as a reader finds it (the caller bounds and types it)."""

    role: str
    text: str
    tools: tuple[str, ...]


class Files(Protocol):
    """Bounded, link-free access to the agent's files below `root` (the workspace), handed to a reader."""

    root: Path

    def tail(self, path: Path, limit: int) -> tuple[str, bool] | None:
        """The last `limit` bytes of a regular file (from a whole line when cut) and whether it was cut."""
        ...

    def glob(self, pattern: str, entries: int) -> list[str]:
        """The `root`-relative paths of regular files matching `pattern`, looking at `entries` at most."""
        ...


@dataclass(frozen=True)
class TranscriptReader:
    """Where a harness keeps its session or trajectory, and how its turns are read from it."""

    # HOME-relative glob patterns of the file; the newest match is the transcript the monitor shows.
    patterns: tuple[str, ...]
    parse: Callable[[str, bool], Iterable[Turn]]  # (text read, whether it was cut) -> turns
    # How the text is read when it is not the tail of that one file: (files, the file, byte budget) -> (text, cut).
    read: Callable[[Files, Path, int], tuple[str, bool] | None] | None = None


@dataclass(frozen=True)
class Harness:
    """One real coding-agent harness: its launch recipe, its image layer and its transcript reader."""

    name: str
    version: str
    layer: Layer
    first: Callable[[str, str], list[str]]  # (prompt, model) -> argv
    resume: Callable[[str, str, str], list[str]]  # (prompt, model, session) -> argv
    env: Callable[[str, str], dict[str, str]]  # (base_url, model) -> environment
    parse: Callable[[str, str, int], Report]  # (stdout, stderr, exit code) -> report
    files: Callable[[str, str], dict[str, str]] = lambda base, model: {}  # HOME-relative config files
    caveat: str = ""
    keys: tuple[str, ...] = field(default=())  # environment variables it reads an API key from
    # HOME-relative glob patterns of the files a session's history is appended to (session id -> patterns): a
    # call the harness itself failed is cut from them, so the infra retry resumes the session as it was; a
    # pattern that names a directory (a session store the harness rewrites) is put back whole instead.
    history: Callable[[str], tuple[str, ...]] = lambda session: ()
    transcript: TranscriptReader | None = None  # None: no transcript is read
    # The one wire protocol it talks to its model in (`staminad.engine.models.PROTOCOLS`): a sweep pairing it
    # with a model that does not serve this is refused before it starts.
    protocol: str = "openai-chat"
    # Puts the model's context window and compaction threshold into its environment and config files, in
    # place: (model, window, compaction limit in tokens, compaction share, env, files). None: no such setting.
    window: Callable[[str, int, int, float, dict[str, str], dict[str, str]], None] | None = None
    # The tool its model runs a shell command with, and that tool's argument holding the command, as found by
    # running the pinned version against a stand-in model (the end-to-end tests drive every harness that has
    # one through it). None: not pinned here (no such tool, or its layer is not built in the tests).
    shell: tuple[str, str] | None = None

    @property
    def install(self) -> str:
        return self.layer.install

    @property
    def base(self) -> str:
        return self.layer.base


# --- helpers for the parsers ----------------------------------------------------------------------


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines text; a line that does not parse (a torn last one) is skipped."""
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


def as_int(value: object) -> int:
    return value if isinstance(value, int) else 0


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_str(value: object) -> str:
    return value if isinstance(value, str) else ""


def texts(content: object, kinds: tuple[str, ...] = ("text",)) -> str:
    """The text of a message's content: a string, or the `text` of its parts of the given kinds."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        as_str(part.get("text")) for part in content if isinstance(part, dict) and part.get("type") in kinds
    ).strip()


def turn(role: object, text: str, tools: Iterable[str] = ()) -> Turn:
    return Turn(role=as_str(role) or "?", text=text.strip(), tools=tuple(t for t in tools if t))


def chat_turn(message: dict[str, Any]) -> Turn | None:
    """A chat message (OpenAI shape) as a turn; None for bookkeeping roles (`_`-prefixed, `exit`)."""
    role = message.get("role")
    if not isinstance(role, str) or role.startswith("_") or role == "exit":
        return None
    calls = message.get("tool_calls")
    tools = [as_str(as_dict(as_dict(c).get("function")).get("name")) for c in calls] if isinstance(calls, list) else []
    return turn(role, texts(message.get("content")), tools)
