"""`staminad sandboxes [--prune]`: the project's sandboxes on each engine, whose they are, and the orphans removed.

A sandbox is an orphan when the state directory that owns it is gone or no longer needs it
(`staminad.sandbox.docker.orphans`); `--prune` removes those, a line each. Sandboxes of a state directory in use
(a daemon or `staminad run` holds its lock), of another machine, or of a directory this user cannot read are
listed with whose they are and never touched. The engines looked at are this machine's, each `--engine`, and
those the state directory's sweeps name.
"""

from __future__ import annotations

import argparse
import json

import anyio
import msgspec

from protocol.paths import resolve_state_dir, state_dir_flag
from protocol.usage import hint
from staminad.commands.args import CommandError, UsageError, add_engine_flag


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("sandboxes", help="list the project's sandboxes on each engine; --prune removes the orphans")
    p.add_argument("--prune", action="store_true", help="remove the orphans (their state directory is gone or done)")
    add_engine_flag(
        p,
        "another Docker engine to look at (repeatable; this machine's is always looked at)",
    )
    p.add_argument(
        "--sweep",
        default="",
        help="with --prune, also remove this sweep's sandboxes of the state directory, kept for a resume "
        "(refused while a daemon or run uses the directory; a resume then makes them afresh)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per sandbox")
    p.add_argument(
        "--state-dir", type=state_dir_flag, default=None, help="default: $STAMINAD_STATE_DIR or XDG state home"
    )
    p.set_defaults(func=sandboxes_cmd)


def sandboxes_cmd(args: argparse.Namespace) -> int:
    from staminad.sandbox.docker.orphans import engines_used, survey

    state_dir = resolve_state_dir(args.state_dir)
    if args.sweep and not args.prune:
        raise UsageError("--sweep names the sweep whose sandboxes --prune removes: give --prune too")
    release = (state_dir.resolve(), args.sweep) if args.sweep else None
    found = anyio.run(survey, engines_used(state_dir, args.engines), None, args.prune, release)
    removed = {(r.engine, r.kind, r.name) for r in found.removed}
    for s in found.sandboxes:
        gone = (s.engine, s.kind, s.name) in removed
        if args.json:
            print(json.dumps({**msgspec.structs.asdict(s), "removed": gone}))
            continue
        where = f"{s.kind} {s.name} on {s.engine}" + (" (running)" if s.running else "")
        if gone:
            print(f"removed {where}: {s.orphan}")
        elif s.orphan:
            print(f"orphan {where}: {s.orphan}")
        else:
            print(f"kept {where}: {s.owner}")
    left = len(found.orphans)
    if not args.json:
        total = len(found.sandboxes)
        print(
            f"{total} sandboxes, {len(found.removed)} removed, {left} orphans"
            + (f" left (remove them with `{hint('sandboxes --prune')}`)" if left and not args.prune else "")
        )
    for line in found.unanswered:
        print(f"not looked at: {line}")
    if args.prune and left:
        raise CommandError(f"{left} orphaned sandboxes could not be removed (see the lines above)")
    return 0
