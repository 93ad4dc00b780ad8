"""`staminad run SWEEP.toml`: run a sweep in process with a live progress log and a final table."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from protocol.paths import resolve_state_dir, state_dir_flag
from protocol.usage import hint
from staminad.commands.args import (
    CommandError,
    UsageError,
    add_engine_flag,
    check_engines,
    check_store,
    integer,
    lock_state_dir,
    seconds,
)

if TYPE_CHECKING:  # the engine is imported when a sweep runs, not for `--help`
    from staminad.commands.progress import Progress
from staminad.sandbox.runtimes import RUNTIME_CHOICES, RUNTIME_HELP


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("run", help="run a sweep in process (resumes if run again)")
    p.add_argument("sweep", type=Path)
    p.add_argument(
        "--state-dir", type=state_dir_flag, default=None, help="default: $STAMINAD_STATE_DIR or XDG state home"
    )
    p.add_argument("--runtime", choices=RUNTIME_CHOICES, help=f"override the sweep's runtime ({RUNTIME_HELP})")
    p.add_argument("--quiet", action="store_true", help="only the final table")
    add_engine_flag(
        p,
        "a Docker engine to spread the sweep over (repeatable; the sweep's own [run] engines win)",
    )
    p.add_argument(
        "--force-new", action="store_true", help="replace a stored sweep of the same name whose configuration differs"
    )
    p.set_defaults(func=run_cmd)
    d = sub.add_parser("done", help="finish a manual attempt: write its completion marker")
    d.add_argument("--marker", type=Path, required=True, help="the marker path the engine printed")
    d.add_argument("--exit", type=integer, default=0, help="the exit status to record (0..255; 0: done)")
    d.add_argument(
        "--wait",
        action="store_true",
        help="then wait until the attempt is tested: print its outcome and the next prompt's path",
    )
    d.add_argument(
        "--timeout", type=seconds, default=1800.0, help="with --wait: give up after this many seconds (default 1800)"
    )
    d.set_defaults(func=done_cmd)


def _say(line: str) -> None:
    print(line, flush=True)


def run_cmd(args: argparse.Namespace) -> int:
    from staminad.commands.progress import Progress
    from staminad.engine.config import SweepError, load_sweep
    from staminad.engine.summary import format_summary
    from staminad.packio import read_pack
    from staminad.sandbox.ports import PortAllocator

    try:
        sweep, fingerprint = load_sweep(args.sweep)
    except SweepError as exc:
        raise UsageError(str(exc)) from None
    state_dir = resolve_state_dir(args.state_dir)
    pack = None
    if sweep.scenarios.pack:
        pack_path = Path(sweep.scenarios.pack)
        if not pack_path.is_absolute():
            pack_path = args.sweep.parent / pack_path
        pack = read_pack(pack_path)
    runtime = args.runtime or sweep.run.runtime
    from staminad.engine.config import sweep_images
    from staminad.engine.runtime import choose_runtime

    lock = _lock_state_dir(state_dir)
    try:
        check_store(state_dir / "staminad.db", migrating=True)
        try:
            replaced = anyio.run(_check_stored, sweep, fingerprint, args.sweep, args.force_new, state_dir)
        except SweepError as exc:
            raise UsageError(str(exc)) from None
        if replaced:
            print(f"replaced the stored sweep {sweep.name} (--force-new)", flush=True)
        factory, chosen = anyio.run(
            choose_runtime, runtime, sweep.run, PortAllocator(), sweep_images(sweep), check_engines(args.engines)
        )
        print(f"runtime: {chosen}; state: {state_dir}", flush=True)
        progress = Progress(args.quiet, _say)
        summaries = anyio.run(_until_interrupted, sweep, fingerprint, state_dir, factory, progress, pack)
        if summaries is None:
            again = f"`{hint('run')} {args.sweep}`"
            prune = f"`{hint('sandboxes --prune --sweep')} {sweep.name} --state-dir {state_dir}`"
            print(f"interrupted: the sweep's sandboxes are kept for a resume ({again} again); {prune} removes them")
            return 130
        print(format_summary(summaries))
        return 0
    finally:
        os.close(lock)


async def _until_interrupted(
    sweep: Any, fingerprint: str, state_dir: Path, factory: Any, progress: Progress, pack: Any
) -> Any:
    """`run_sweep`'s summaries, or None when Ctrl-C stopped it: then, as at a graceful daemon stop, its harnesses
    and sandboxes are left running for a resume (not torn down one by one while the user waits)."""
    import signal

    detach = anyio.Event()
    async with anyio.create_task_group() as tg:

        async def on_interrupt() -> None:
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async for _ in signals:
                    detach.set()
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(on_interrupt)
        from staminad.engine.sweep import run_sweep

        summaries = await run_sweep(sweep, fingerprint, state_dir, factory, progress, pack, detach=detach)
        tg.cancel_scope.cancel()
    return None if detach.is_set() else summaries


def _lock_state_dir(state_dir: Path) -> int:
    """Take the state directory's lock, as the daemon does: one process runs sweeps on a state dir at a time."""
    return lock_state_dir(
        state_dir,
        f"a staminad daemon (or another `{hint('run')}`) is using {state_dir}; submit "
        f"the sweep to the daemon with `{hint('submit FILE')}`, or pass another --state-dir",
        "run",
    )


async def _check_stored(sweep: Any, fingerprint: str, source: Path, force_new: bool, state_dir: Path) -> bool:
    """Refuse (or, with force_new, replace) a stored sweep of this name made from another configuration."""
    from staminad.daemon import resubmit
    from state.store import Store

    await anyio.Path(state_dir).mkdir(parents=True, exist_ok=True)
    store = await Store.open(state_dir / "staminad.db")
    try:
        return await resubmit.check(store, sweep, fingerprint, source, force_new, state_dir)
    finally:
        await store.close()


def done_cmd(args: argparse.Namespace) -> int:
    import json

    from staminad.sandbox.markers import MAX_EXIT

    marker: Path = args.marker
    if not 0 <= args.exit <= MAX_EXIT:
        raise UsageError(f"--exit {args.exit} is not an exit status (0..{MAX_EXIT})")
    if marker.suffix != ".json" or marker.parent.name != "markers":
        raise UsageError(f"{marker} is not a marker path (…/control/markers/<job>.json) printed by the engine")
    if not marker.parent.is_dir():
        raise UsageError(
            f"{marker.parent} does not exist: {marker} is not a marker path of a running attempt "
            "(check the path the engine printed)"
        )
    if marker.exists():
        raise UsageError(f"{marker} already exists: that attempt is already finished")
    if args.wait:
        from staminad.commands import donewait

        donewait.locate(marker)  # a path --wait cannot follow is refused before the attempt is marked
    now = time.time()
    tmp = marker.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps({"exit": args.exit, "signal": None, "started": now, "ended": now}))
        tmp.replace(marker)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CommandError(f"cannot write {marker}: {exc.strerror or exc}") from None
    print(f"marked {marker.stem} finished", file=sys.stderr)
    if args.wait:
        from staminad.commands import donewait

        return donewait.wait(marker, args.timeout, _say)
    return 0
