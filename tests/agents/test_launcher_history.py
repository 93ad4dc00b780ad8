"""The launcher puts a session back as it was when the harness itself failed a call, at turn 0 as at any later turn."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

from staminad.agents.harnesses import HARNESSES

LAUNCHER = Path(__file__).parents[2] / "staminad" / "agents" / "scripts" / "harness.py"


def _launcher() -> ModuleType:
    spec = importlib.util.spec_from_file_location("staminabench_launcher", LAUNCHER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_failed_first_call_leaves_no_session_store_behind(tmp_path: Path) -> None:
    """A session store created by a failed first call is removed, so the retry starts clean."""
    # The store used to keep the failed prompt, and the retry read `user TURN0 | user TURN0`.
    home = tmp_path / "ws" / ".home"
    home.mkdir(parents=True)
    before = _launcher().History.take(home, home / ".staminabench" / "kept", HARNESSES["mini-swe-agent"].history(""))
    store = home / ".staminabench" / "mini"
    store.mkdir(parents=True)
    (store / "session.json").write_text(json.dumps({"messages": [{"role": "user", "content": "TURN0"}]}))
    before.put_back()
    assert not store.exists()


def test_a_failed_later_call_puts_the_store_back_as_it_was(tmp_path: Path) -> None:
    """At turn 1 the driver's store holds turn 0: the failed call's prompt and exit are gone from it afterwards."""
    home = tmp_path / "ws" / ".home"
    store = home / ".staminabench" / "mini"
    store.mkdir(parents=True)
    turn0 = json.dumps({"messages": [{"role": "user", "content": "TURN0"}, {"role": "assistant", "content": "ok"}]})
    (store / "session.json").write_text(turn0)
    before = _launcher().History.take(home, home / ".staminabench" / "kept", HARNESSES["mini-swe-agent"].history("s"))
    (store / "session.json").write_text(turn0[:-2] + ', {"role": "user", "content": "TURN1"}]}')
    (store / "session.tmp").write_text("half")
    before.put_back()
    assert (store / "session.json").read_text() == turn0 and not (store / "session.tmp").exists()


def test_appended_histories_are_cut_back_also_in_the_workspace(tmp_path: Path) -> None:
    """Appended histories (codex's rollout, aider's chat file) are cut back; another thread's rollout is kept."""
    ws = tmp_path / "ws"
    home = ws / ".home"
    day = home / ".codex" / "sessions" / "2026" / "12" / "02"
    day.mkdir(parents=True)
    mine, other = day / "rollout-2026-12-02T10-00-00-T1.jsonl", day / "rollout-2026-12-02T09-00-00-T0.jsonl"
    mine.write_text('{"turn": 0}\n')
    other.write_text('{"turn": 0}\n')
    (ws / ".aider.chat.history.md").write_text("#### TURN0\n")
    launcher = _launcher()
    patterns = (*HARNESSES["codex"].history("T1"), *HARNESSES["aider"].history(".aider.chat.history.md"))
    before = launcher.History.take(home, home / ".staminabench" / "kept", patterns)
    for path in (mine, other, ws / ".aider.chat.history.md"):
        path.write_text(path.read_text() + "TURN1 and its error\n")
    before.put_back()
    assert mine.read_text() == '{"turn": 0}\n' and (ws / ".aider.chat.history.md").read_text() == "#### TURN0\n"
    assert other.read_text().endswith("TURN1 and its error\n")


def test_every_harness_names_its_history_without_a_session_only_where_that_is_safe() -> None:
    """Before a session exists only whole stores are named, never a pattern built from an empty session id."""
    for name, h in HARNESSES.items():
        for pattern in h.history(""):
            assert "{" not in pattern and not pattern.endswith(("/", "/.jsonl", "-.jsonl")), (name, pattern)
    assert HARNESSES["mini-swe-agent"].history("") == (".staminabench/mini",)
    named = {"claude-code", "codex", "kimi-cli", "qwen-code", "mistral-vibe"}
    assert all(HARNESSES[n].history("") == () and HARNESSES[n].history("S") for n in named)
