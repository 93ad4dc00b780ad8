"""Launches one call of a real harness inside the sandbox: same session, gateway URL, no prompts, one report.

python3 harness.py --harness NAME --workspace DIR --prompt-file FILE

Reads the model and the gateway's base URL from STAMINA_LLM_MODEL and STAMINA_LLM_BASE_URL, writes the
harness's config files under HOME, runs the first command of a session or the one that continues it
(the session id is kept in HOME), with stdin closed, and parses its output. Exit 0: the harness ran
(whether or not the agent finished well: the tests judge that); exit 3: the harness itself failed
(crashed, no result, API errors), which the engine counts as an infrastructure failure; such a call is cut
from the session's history files (those the adapter names), and a history directory it names is put back as
it was before the call, so the infra retry resumes the session as it was.
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

from harnesses import HARNESSES  # type: ignore[import-not-found]  # noqa: E402 - beside this script

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
    for rel, text in harness.files(base, model).items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    env = dict(os.environ)
    for key, value in harness.env(base, model).items():
        # Relative paths in a harness's environment live under HOME, which persists with the workspace.
        env[key] = str(home / value) if value.startswith(".") else value
    session_file = own / f"{harness.name}.session"
    session = session_file.read_text().strip() if session_file.exists() else ""
    prompt = args.prompt_file.read_text()
    argv = harness.resume(prompt, model, session) if session else harness.first(prompt, model)
    history = _sizes(home, harness.history(session)) if session else {}
    kept = _keep(home, own / "kept", harness.history(session)) if session else {}
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
        _cut(history)
        _restore(kept)
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


def _sizes(home: Path, patterns: tuple[str, ...]) -> dict[Path, int]:
    """The session history files and their sizes now."""
    return {path: path.stat().st_size for pattern in patterns for path in home.glob(pattern) if path.is_file()}


def _keep(home: Path, store: Path, patterns: tuple[str, ...]) -> dict[Path, Path]:
    """Copies of the session history directories (a harness that rewrites its session store), by directory."""
    shutil.rmtree(store, ignore_errors=True)
    found = [path for pattern in patterns for path in home.glob(pattern) if path.is_dir()]
    kept = {path: store / str(n) for n, path in enumerate(found)}
    for path, copy in kept.items():
        shutil.copytree(path, copy, symlinks=True)
    return kept


def _restore(kept: dict[Path, Path]) -> None:
    """Put each kept history directory back as it was before the call."""
    for path, copy in kept.items():
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(copy, path, symlinks=True)


def _cut(sizes: dict[Path, int]) -> None:
    """Truncate each history file back to its size before the call (the harness appends to them)."""
    for path, size in sizes.items():
        try:
            if path.stat().st_size > size:
                os.truncate(path, size)
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(main())
