"""Agent transcripts: each harness's session file, as the pinned version writes it, read into bounded items."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from staminad.agents.harnesses import HARNESSES
from staminad.agents.transcripts import MAX_ITEMS, READ_LIMIT, TEXT_LIMIT, read_transcript
from tests.helpers.e2e import RECORDINGS

# Where each harness leaves its session under HOME (its declared pattern, filled in) and the real capture put there.
PLACED = {
    "claude-code": (".claude/projects/-workspace/a89d.jsonl", "claude-code-project.jsonl"),
    "codex": (".codex/sessions/2026/12/01/rollout-2026-12-01T16-09-44-01a2.jsonl", "codex-rollout.jsonl"),
    "kimi-cli": (".kimi/sessions/6f8c/bff3/context.jsonl", "kimi-cli-context.jsonl"),
    "mini-swe-agent": (".staminabench/mini/session.json", "mini-swe-agent-session.json"),
}


def _place(home: Path, harness: str, source: Path | None = None) -> Path:
    rel, name = PLACED[harness]
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source or RECORDINGS / name, path)
    return path


VIBE_STORE = next((RECORDINGS / "mistral-vibe-store").iterdir())


def _place_vibe(home: Path) -> Path:
    """Mistral Vibe's session store (the files of it the reader uses) where vibe keeps it under HOME."""
    store = home / ".vibe/logs/session/unified" / VIBE_STORE.name
    shutil.copytree(VIBE_STORE, store)
    return store


def _shape(home: Path, harness: str) -> list[tuple[str, tuple[str, ...], str]]:
    t = read_transcript(home, harness)
    assert t is not None
    return [(i.role, i.tools, i.text[:24]) for i in t.items]


OPENHANDS_CONVERSATION = RECORDINGS / "openhands-conversation"


def _place_openhands(home: Path) -> Path:
    """OpenHands' conversation (one JSON file per event) where it keeps it under HOME."""
    shutil.copytree(OPENHANDS_CONVERSATION, home / ".openhands/conversations")
    events = sorted((home / ".openhands/conversations").glob("*/events/event-*.json"))
    for n, event in enumerate(events):  # written in turn, as in a run (a checkout gives them all one time)
        os.utime(event, (1_700_000_000 + n, 1_700_000_000 + n))
    return events[-1]


def test_every_declared_pattern_finds_the_file_its_harness_writes(tmp_path: Path) -> None:
    """A session file placed where the harness writes it is the transcript read; Vibe's session store is not read."""
    for harness in PLACED:
        path = _place(tmp_path / harness, harness)
        found = read_transcript(tmp_path / harness, harness)
        assert found is not None and found.path == str(path) and found.items, harness
    store = _place_vibe(tmp_path / "vibe")
    found = read_transcript(tmp_path / "vibe", "mistral-vibe")
    assert found is not None and found.path == str(store / "CURRENT")
    newest_event = _place_openhands(tmp_path / "openhands")
    found = read_transcript(tmp_path / "openhands", "openhands")
    assert found is not None and found.path == str(newest_event)
    assert {h for h in HARNESSES if HARNESSES[h].transcript} == {*PLACED, "mistral-vibe", "openhands"}
    assert read_transcript(tmp_path / "nothing", "claude-code") is None and read_transcript(tmp_path, "aider") is None


def test_claude_code_records_become_turns_with_their_tools(tmp_path: Path) -> None:
    """Claude Code 2.1.332 project JSONL (real capture): prompts, text, Bash by name, its result; the rest skipped."""
    _place(tmp_path, "claude-code")
    t = read_transcript(tmp_path, "claude-code")
    # Two short calls already make 267 KB (prompt snapshots, request shapes): only the tail is read, and the
    # first prompt's record falls before it.
    assert t is not None and t.cut
    assert [(i.role, i.tools, i.text[:24]) for i in t.items] == [
        ("assistant", (), "I'll write the file."),
        ("assistant", ("Bash",), ""),
        ("tool", (), "hi"),
        ("assistant", (), "The file is written."),
        ("user", (), "Now make the following c"),
        ("assistant", (), "Nothing needs to change."),
    ]


def test_claude_code_stream_records_read_the_same(tmp_path: Path) -> None:
    """Its stream-json records (real capture, the same shapes): Write and Bash calls, results, the answer."""
    _place(tmp_path, "claude-code", RECORDINGS / "claude-code.jsonl")
    shape = _shape(tmp_path, "claude-code")
    assert shape[0] == ("assistant", (), "I'll write the server.")
    assert ("assistant", ("Write",), "") in shape and ("assistant", ("Bash",), "") in shape
    assert ("tool", (), "compiled") in shape and shape[-1] == ("assistant", (), "The server is written an")


def test_codex_rollout_items_become_turns(tmp_path: Path) -> None:
    """codex-cli 0.163.0 rollout (real capture): both prompts, apply_patch and exec_command, their output, answers."""
    _place(tmp_path, "codex")
    shape = _shape(tmp_path, "codex")
    assert ("user", (), "Write hello.txt.") in shape
    assert ("assistant", ("apply_patch",), "") in shape and ("assistant", ("exec_command",), "") in shape
    assert any(role == "tool" and text.startswith("Exit code: 0") for role, _, text in shape)
    assert shape[-2:] == [("user", (), "Now make the following c"), ("assistant", (), "Nothing needs to change.")]


def test_kimi_messages_become_turns_and_its_bookkeeping_is_skipped(tmp_path: Path) -> None:
    """Kimi CLI 1.51.0 context.jsonl (real capture): prompts, Shell call, result, answers; `_` records skipped."""
    _place(tmp_path, "kimi-cli")
    assert _shape(tmp_path, "kimi-cli") == [
        ("user", (), "Write a.txt."),
        ("assistant", ("Shell",), ""),
        ("tool", (), "<system>Command executed"),
        ("assistant", (), "The file is written."),
        ("user", (), "Now make the following c"),
        ("assistant", (), "Nothing needs to change."),
    ]


def test_mini_swe_agent_session_becomes_turns_whole_or_from_its_tail(tmp_path: Path) -> None:
    """mini-swe-agent 2.4.6 through our driver (real capture): the messages, whole or only those whole in a tail."""
    path = _place(tmp_path, "mini-swe-agent")
    shape = _shape(tmp_path, "mini-swe-agent")
    turn = ["user", "assistant", "tool", "assistant"]  # the prompt, a bash call and its output, the submit
    assert [role for role, _, _ in shape] == ["system", *turn, *turn]
    assert shape[2] == ("assistant", ("bash",), "I will write the server.")
    session = json.loads(path.read_text())
    session["messages"] = [{"role": "user", "content": "x" * 1000}] * 400 + session["messages"]
    path.write_text(json.dumps(session))  # larger than READ_LIMIT: only its tail is read
    tail = read_transcript(tmp_path, "mini-swe-agent")
    assert tail is not None and tail.cut
    assert [(i.role, i.tools, i.text[:24]) for i in tail.items][-9:] == shape


def test_mistral_vibe_store_gives_its_latest_generations_messages(tmp_path: Path) -> None:
    """Mistral Vibe 3.0.2 (real capture): CURRENT -> manifest -> chunks give both prompts, the bash call, answers."""
    _place_vibe(tmp_path)
    assert _shape(tmp_path, "mistral-vibe") == [
        ("user", (), "Write a.txt."),
        ("assistant", ("bash",), ""),
        ("tool", (), '{"command":"echo hi > a.'),
        ("assistant", (), "The file is written."),
        ("user", (), "Now make the following c"),
        ("assistant", (), "Nothing needs to change."),
    ]


def test_openhands_events_become_turns_read_back_from_the_last_files(tmp_path: Path) -> None:
    """An OpenHands 1.12.1 capture becomes turns, its earliest events left out past the byte budget."""
    _place_openhands(tmp_path)
    shape = _shape(tmp_path, "openhands")
    assert shape[0] == ("user", (), "Implement the REST API s")
    assert [tools for _, tools, _ in shape[1:6]] == [("terminal",), *[("file_editor",)] * 3, ("terminal",)]
    # The `rm`'s empty result is not an item; the shell's escape sequences are cut from the others.
    assert shape[6:10] == [("tool", (), "File created successfull")] * 3 + [("tool", (), "rewritten")]
    assert shape[-3:] == [
        ("assistant", (), "The server is written an"),
        ("user", (), "The tests passed. Now ma"),
        ("assistant", (), "Nothing needs to change."),
    ]
    events = sorted((tmp_path / ".openhands/conversations").glob("*/events/event-*.json"))
    events[0].write_text(events[0].read_text() + " " * READ_LIMIT)  # the first event alone is past the budget
    cut = read_transcript(tmp_path, "openhands")
    assert cut is not None and cut.cut and [(i.role, i.tools, i.text[:24]) for i in cut.items] == shape


def test_a_broken_or_hostile_vibe_store_is_not_followed(tmp_path: Path) -> None:
    """A pointer or manifest that does not parse, or names paths outside the store, gives nothing, no error."""
    store = _place_vibe(tmp_path)
    manifest = next((store / "generations").glob("*/manifest.json"))
    data = json.loads(manifest.read_text())
    data["checkpoint"]["chunks"] = ["../../../../etc/passwd", 7]
    manifest.write_text(json.dumps(data))
    t = read_transcript(tmp_path, "mistral-vibe")
    assert t is not None and t.items == ()
    (store / "CURRENT").write_text('{"generation": "../x"}')
    assert read_transcript(tmp_path, "mistral-vibe") is None
    (store / "CURRENT").write_bytes(os.urandom(100))
    assert read_transcript(tmp_path, "mistral-vibe") is None


def test_a_huge_session_file_is_read_bounded(tmp_path: Path) -> None:
    """A 6 MB session of long records: only its tail is read, the last MAX_ITEMS items, each cut; the latest last."""
    path = tmp_path / PLACED["claude-code"][0]
    path.parent.mkdir(parents=True)
    with path.open("w") as fh:
        for n in range(2000):
            record = {"type": "assistant", "message": {"role": "assistant", "content": f"{n} " + "y" * 3000}}
            fh.write(json.dumps(record) + "\n")
        fh.write('{"type": "assistant", "message": {"role": "assis')  # torn: the harness was writing it
    t = read_transcript(tmp_path, "claude-code")
    assert t is not None and t.cut and len(t.items) == MAX_ITEMS
    assert all(len(i.text) <= TEXT_LIMIT + 2 for i in t.items) and t.items[-1].text.startswith("1999 ")
    assert path.stat().st_size > READ_LIMIT


@pytest.mark.parametrize("harness", list(PLACED))
def test_garbage_in_a_session_file_is_skipped_never_an_error(tmp_path: Path, harness: str) -> None:
    """Binary noise, unknown kinds and fields of the wrong type give no items or only the good ones, no error."""
    junk = [
        os.urandom(512).decode("latin-1"),
        "{not json",
        "[1, 2]",
        json.dumps({"type": "assistant", "message": "not a dict", "payload": 5, "role": 7}),
        json.dumps({"type": "user", "message": {"content": 5}}),
        json.dumps({"type": "response_item", "payload": {"type": "message", "content": {"x": 1}}}),
        json.dumps({"role": "assistant", "content": [5, None], "tool_calls": [1, {"function": 3}]}),
        json.dumps({"type": "mystery", "payload": {"type": "new_kind"}}),
    ]
    source = tmp_path / "junk"
    source.write_text("\n".join(junk) + "\n")
    _place(tmp_path / "home", harness, source)
    t = read_transcript(tmp_path / "home", harness)
    assert t is not None and all(isinstance(i.text, str) for i in t.items)


def test_a_planted_link_or_fifo_is_not_read(tmp_path: Path) -> None:
    """A session path the agent made a symlink (to a device) or a FIFO is not followed or opened."""
    path = tmp_path / PLACED["claude-code"][0]
    path.parent.mkdir(parents=True)
    path.symlink_to("/dev/zero")
    assert read_transcript(tmp_path, "claude-code") is None
    path.unlink()
    os.mkfifo(path)
    assert read_transcript(tmp_path, "claude-code") is None


def test_the_newest_session_file_is_the_transcript(tmp_path: Path) -> None:
    """With several sessions (an earlier scenario's, a retried one), the one written last is shown."""
    old = _place(tmp_path, "claude-code")
    new = old.with_name("later.jsonl")
    new.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "the later one"}}) + "\n")
    os.utime(old, (1_000_000, 1_000_000))
    t = read_transcript(tmp_path, "claude-code")
    assert t is not None and t.path == str(new) and [i.text for i in t.items] == ["the later one"]
