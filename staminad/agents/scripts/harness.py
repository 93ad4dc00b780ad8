"""Launches one call of a real harness inside the sandbox: same session, gateway URL, no prompts, one report.

python3 harness.py --harness NAME --workspace DIR --prompt-file FILE

Reads the model and the gateway's base URL from STAMINA_LLM_MODEL and STAMINA_LLM_BASE_URL, writes the
harness's config files under HOME, runs the first command of a session or the one that continues it
(the session id is kept in HOME), with stdin closed, and parses its output. Exit 0: the harness ran
(whether or not the agent finished well: the tests judge that); exit 3: the harness itself failed
(crashed, no result, API errors), which the engine counts as an infrastructure failure; such a call is cut
from the session's history files (those the adapter names), a history directory it names is put back as
it was before the call, and one the call created is removed, so the infra retry resumes the session as it
was (at turn 0 as at any later turn). STAMINA_LLM_CONTEXT_WINDOW and STAMINA_LLM_COMPACT_AT, when set,
reach the harness's own context-window and compaction settings (`windows.py`).
Standard library only.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(os.path.abspath(__file__)).parent
sys.path.insert(0, str(HERE.parent))

from harnesses import HARNESSES  # type: ignore[import-not-found]  # noqa: E402 - the package beside this script
from windows import tune  # type: ignore[import-not-found]  # noqa: E402 - beside this script

HARNESS_FAILED = 3


def resolve(argv: list[str]) -> list[str]:
    """The mini-swe-agent driver runs on the Python that has the harness installed; others from PATH."""
    if argv[0] == "mini-driver":
        python = os.environ.get("STAMINA_MINI_PYTHON", "python3")
        return [python, str(HERE.parent / "drivers" / "mini_driver.py"), *argv[1:]]
    own = Path(os.environ.get("STAMINA_HARNESS_BIN", "/nonexistent")) / argv[0]
    found = str(own) if own.exists() else shutil.which(argv[0])
    return [found or argv[0], *argv[1:]]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", required=True, choices=sorted(HARNESSES))
    ap.add_argument("--workspace", type=Path, required=True)
    ap.add_argument("--prompt-file", type=Path, required=True)
    args = ap.parse_args()
    harness = HARNESSES[args.harness]
    home = Path(os.environ["HOME"])
    own = home / ".staminabench"
    own.mkdir(parents=True, exist_ok=True)
    base, model = os.environ["STAMINA_LLM_BASE_URL"], os.environ["STAMINA_LLM_MODEL"]
    tokens = int(os.environ.get("STAMINA_LLM_CONTEXT_WINDOW") or 0)
    at = float(os.environ.get("STAMINA_LLM_COMPACT_AT") or 0.8)
    settings, files = tune(harness, model, harness.env(base, model), harness.files(base, model), tokens, at)
    for rel, text in files.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    env = dict(os.environ)
    for key, value in settings.items():
        # Relative paths in a harness's environment live under HOME, which persists with the workspace.
        env[key] = str(home / value) if value.startswith(".") else value
    session_file = own / f"{harness.name}.session"
    session = session_file.read_text().strip() if session_file.exists() else ""
    prompt = args.prompt_file.read_text()
    argv = harness.resume(prompt, model, session) if session else harness.first(prompt, model)
    # Kept at every call, the first too: a failed first call must not leave its prompt for the retry.
    before = History.take(home, own / "kept", harness.history(session))
    calls = len(list(own.glob(f"{harness.name}-*.out")))
    out_path, err_path = own / f"{harness.name}-{calls:04d}.out", own / f"{harness.name}-{calls:04d}.err"
    try:
        with out_path.open("w") as out, err_path.open("w") as err:
            code = subprocess.run(
                resolve(argv),
                cwd=args.workspace,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                check=False,
            ).returncode
    except OSError as exc:
        print(f"harness: cannot start {argv[0]}: {exc}", file=sys.stderr)
        return HARNESS_FAILED
    report = harness.parse(out_path.read_text(errors="replace"), err_path.read_text(errors="replace"), code)
    if not report.ok:
        # The harness failed (an infra failure, retried): the session stays as it was before this call, so
        # the retry does not see the failed prompt and its error in the history.
        before.put_back()
    elif report.session:
        session_file.write_text(report.session)
    shutil.rmtree(own / "kept", ignore_errors=True)
    summary = {
        "harness": harness.name,
        "version": harness.version,
        "exit": code,
        "ok": report.ok,
        "session": report.session,
        "input_tokens": report.input_tokens,
        "output_tokens": report.output_tokens,
        "error": report.error,
    }
    (own / f"{harness.name}.last.json").write_text(json.dumps(summary))
    print(json.dumps(summary), flush=True)
    return 0 if report.ok else HARNESS_FAILED


class History:
    """A session's history as it was before a call, to put back when the harness itself failed the call.

    Patterns are HOME-relative globs; `../` leads out of HOME into the workspace (a harness that keeps its
    history there, aider). Files are cut back to their size (harnesses append to them), directories are copied
    and put back whole (a session store the harness rewrites), and a pattern without wildcards that named
    nothing before the call has what the call created removed.
    """

    def __init__(self, sizes: dict[Path, int], kept: dict[Path, Path], absent: list[Path]) -> None:
        self.sizes, self.kept, self.absent = sizes, kept, absent

    @classmethod
    def take(cls, home: Path, store: Path, patterns: tuple[str, ...]) -> "History":
        shutil.rmtree(store, ignore_errors=True)
        sizes: dict[Path, int] = {}
        kept: dict[Path, Path] = {}
        absent: list[Path] = []
        for pattern in patterns:
            root, rest = home, pattern
            while rest.startswith("../"):
                root, rest = root.parent, rest[3:]
            found = sorted(root.glob(rest))
            if not found and not any(c in rest for c in "*?["):
                absent.append(root / rest)
            for path in found:
                if path.is_dir() and not path.is_symlink():
                    kept[path] = store / str(len(kept))
                    shutil.copytree(path, kept[path], symlinks=True)
                elif path.is_file():
                    sizes[path] = path.stat().st_size
        return cls(sizes, kept, absent)

    def put_back(self) -> None:
        """Cut each file back, put each directory back, remove what the failed call created."""
        for path, size in self.sizes.items():
            try:
                if path.stat().st_size > size:
                    os.truncate(path, size)
            except OSError:
                pass
        for path, copy in self.kept.items():
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(copy, path, symlinks=True)
        for path in self.absent:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            elif path.exists() or path.is_symlink():
                path.unlink()


if __name__ == "__main__":
    sys.exit(main())
