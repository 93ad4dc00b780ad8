"""`staminad report` and `staminad export`: tables, figures and flat data from the state store."""

from __future__ import annotations

import argparse
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from protocol.paths import resolve_state_dir, state_dir_flag
from protocol.usage import hint, integer
from staminad.analysis.data import ConfigData
from staminad.commands.args import CommandError, UsageError, check_store
from state.lock import LOCK_NAME

if TYPE_CHECKING:
    from staminad.analysis.reportdata import Report


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    r = sub.add_parser("report", help="tables and figures for one or more sweeps")
    r.add_argument("sweeps", nargs="*", help="sweep names (default: every sweep in the store)")
    r.add_argument("--format", choices=("md", "latex", "json", "csv"), default="md")
    r.add_argument("--out", type=Path, help="directory for the report file and figures (default: print table)")
    r.add_argument("--force", action="store_true", help="write over a report already in --out")
    r.add_argument("--state-dir", type=state_dir_flag)
    r.add_argument("--bootstrap", type=integer, default=2000, help="bootstrap resamples for RMST CIs (100..100000)")
    r.add_argument(
        "--html",
        action="store_true",
        help="also write the viewer's pages as a static site under OUT/site (needs --out)",
    )
    r.add_argument(
        "--include-cancelled",
        action="store_true",
        help="with no sweep named, also report cancelled sweeps (left out by default)",
    )
    r.set_defaults(func=report_cmd)
    e = sub.add_parser("export", help="every attempt as CSV or Parquet, for notebooks")
    e.add_argument("sweeps", nargs="*")
    e.add_argument("--format", choices=("csv", "parquet"), default="csv")
    e.add_argument("--out", type=Path, required=True)
    e.add_argument("--force", action="store_true", help="write over an existing --out file")
    e.add_argument("--state-dir", type=state_dir_flag)
    e.set_defaults(func=export_cmd)


def _db(args: argparse.Namespace) -> Path:
    return resolve_state_dir(args.state_dir) / "staminad.db"


def _check_schema(db: Path) -> None:
    """One line for a store this staminad cannot report on as it is (older or newer schema)."""
    import sqlite3

    from state import browse, queries

    try:
        conn = queries.connect_readonly(db)
    except FileNotFoundError:
        return  # `load` says so
    try:
        version = browse.schema_version(conn)
    except browse.StoreVersionError as exc:
        raise UsageError(str(exc)) from None
    except sqlite3.DatabaseError as exc:  # the store, not the command line, is at fault: a runtime error
        raise CommandError(f"{db} is not a readable staminad store ({exc})") from None
    finally:
        conn.close()
    if version < browse.LATEST:
        raise UsageError(
            f"{db} was written by an older staminad (schema version {version} of {browse.LATEST}): "
            f"`{hint('view')}` shows it as it is; `{hint('start')}` or `{hint('run')}` on this state dir "
            "migrates it, then report"
        )


def _sweep_statuses(db: Path) -> dict[str, str]:
    import sqlite3

    from state import queries

    conn = queries.connect_readonly(db)
    try:
        return {str(r[0]): str(r[1]) for r in conn.execute("SELECT id, status FROM sweeps")}
    except sqlite3.DatabaseError as exc:
        raise CommandError(f"cannot read {db}: {exc}") from None
    finally:
        conn.close()


def _configs(args: argparse.Namespace, leave_out_cancelled: bool = False) -> list[ConfigData]:
    import sys

    from staminad.analysis.data import load

    db = _db(args)
    if not db.is_file():
        raise UsageError(f"no state store at {db} (run a sweep first, or pass --state-dir)")
    check_store(db)  # as `run` and `start` check it: a damaged or too new store is one line, exit status 1
    _check_schema(db)
    sweeps = list(args.sweeps) or None
    if sweeps is None and leave_out_cancelled and not getattr(args, "include_cancelled", False):
        statuses = _sweep_statuses(db)
        cancelled = sorted(s for s, status in statuses.items() if status == "cancelled")
        if cancelled:
            sweeps = [s for s in statuses if s not in cancelled]
            print(
                f"staminad: left out cancelled sweeps: {', '.join(cancelled)} (--include-cancelled shows them)",
                file=sys.stderr,
            )
            if not sweeps:
                raise UsageError(f"every sweep in {db} was cancelled; name one or pass --include-cancelled")
    try:
        configs = load(db, sweeps)
    except (FileNotFoundError, KeyError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    if not configs:
        raise UsageError(f"no configurations recorded in {db}")
    return configs


SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database
STORE_SIDE_FILES = ("-wal", "-shm", "-journal")


def _is_sqlite(path: Path) -> bool:
    """Whether `path` is a regular file that starts as an SQLite database does (read without following a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(SQLITE_HEADER)) == SQLITE_HEADER
    finally:
        os.close(fd)


def _a_store(out: Path) -> bool:
    """Whether `out` is an SQLite database (any state dir's store) or the -wal, -shm or -journal beside one."""
    if _is_sqlite(out):
        return True
    side = next((suffix for suffix in STORE_SIDE_FILES if out.name.endswith(suffix)), None)
    return side is not None and _is_sqlite(out.with_name(out.name.removesuffix(side)))


def _locked_dir(target: Path) -> Path | None:
    """The state directory (one holding a staminad lock file) that the resolved `target` is or lies inside."""
    return next((d for d in (target, *target.parents) if (d / LOCK_NAME).exists()), None)


def _check_out(out: Path, db: Path, force: bool, *, follow: bool = False) -> None:
    """Refuse, in one line (exit 2), an output path `report` or `export` must not write: one in a directory that
    does not exist; even with `force`, one inside a state directory (this one's or any other holding a lock
    file: the store, its -wal and -shm, the lock, the socket, the sandboxes), any SQLite database or its -wal
    and -shm, the store under another name (a hard link), and a symbolic link (an output is never written
    through one; `follow` allows it for the `--out` directory itself); and an existing one without `force`."""
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: the directory {out.parent} does not exist (create it first)")
    if not follow and out.is_symlink():
        raise UsageError(f"--out {out} is a symbolic link; outputs are never written through one: remove it first")
    state_dir = db.parent.resolve()
    target = out.resolve()
    if target == state_dir or state_dir in target.parents:
        raise UsageError(
            f"--out {out} is inside the state directory {state_dir}, which holds the store: write elsewhere"
        )
    locked = _locked_dir(target)
    if locked is not None:
        raise UsageError(f"--out {out} is inside {locked}, another staminad state directory: write elsewhere")
    store_files = [Path(f"{db}{suffix}") for suffix in ("", *STORE_SIDE_FILES)]
    if out.exists() and any(f.exists() and out.samefile(f) for f in store_files):
        raise UsageError(f"--out {out} is the state store {db} under another name: write elsewhere")
    if _a_store(out):
        raise UsageError(f"--out {out} is an SQLite database (a store?) or one's -wal/-shm: write elsewhere")
    if out.exists() and not force:
        raise UsageError(f"--out {out} already exists; pass --force to write over it, or name another path")


def _check_in(out: Path, names: list[str], db: Path, force: bool) -> None:
    """`_check_out` for each file `report` writes into the directory `out` (none exist yet if it does not)."""
    if out.is_dir():
        for name in names:
            _check_out(out / name, db, force)


def report_cmd(args: argparse.Namespace) -> int:
    from staminad.analysis import figures, plotting, report
    from staminad.analysis.stats import MAX_BOOTSTRAP, MIN_BOOTSTRAP

    if not MIN_BOOTSTRAP <= args.bootstrap <= MAX_BOOTSTRAP:
        raise UsageError(f"--bootstrap {args.bootstrap} is outside {MIN_BOOTSTRAP}..{MAX_BOOTSTRAP}")
    if args.html and args.out is None:
        raise UsageError("--html needs --out DIR for the site")
    from staminad.analysis import cost

    ext = {"md": "md", "latex": "tex", "csv": "csv", "json": "json"}[args.format]
    written = [f"report.{ext}", *(("site",) if args.html else ())]
    if args.out is not None:  # refused before the report is computed
        if args.out.exists() and not args.out.is_dir():
            raise UsageError(f"--out {args.out} is a file; name a directory for the report and its figures")
        _check_out(args.out, _db(args), force=True, follow=True)  # the directory: an existing one is fine
        _check_in(args.out, written, _db(args), args.force)
    built = report.build(_configs(args, leave_out_cancelled=True), n_boot=args.bootstrap)
    data = report.with_cost(built, cost.study(_db(args), args.sweeps))
    if args.out is not None:  # which figures are drawn depends on the data: their files are checked once known
        _check_in(args.out, figures.file_names(data), _db(args), args.force)
    renderers: dict[str, Callable[[Report], str]] = {
        "md": report.markdown,
        "latex": report.latex,
        "csv": report.csv_table,
        "json": report.to_json,
    }
    text = renderers[args.format](data)
    if args.out is None:
        print(text)
        return 0
    args.out.mkdir(exist_ok=True)  # its parent was checked above: a mistyped path creates no tree
    drawn = figures.draw(data, args.out)
    if args.format == "md":
        text += "\n" + drawn.markdown()
    elif args.format == "latex":
        text += "\n" + drawn.latex()
    with plotting.open_output(args.out / f"report.{ext}") as fh:
        fh.write(text.encode())
    for line in drawn.skipped:
        print(line)
    print(f"wrote {args.out / f'report.{ext}'} and {len(drawn.paths())} figure files to {args.out}")
    if args.html:
        from staminad.viewer.site import write_site

        pages = write_site(_db(args).parent, args.out / "site", args.sweeps, figures=drawn)
        print(f"wrote a static site of {pages} pages to {args.out / 'site'} (open index.html)")
    return 0


def export_cmd(args: argparse.Namespace) -> int:
    from staminad.analysis.export import write

    out: Path = args.out
    if out.is_dir():
        raise UsageError(f"--out {out} is a directory; name the file to write, such as {out / 'attempts.csv'}")
    _check_out(out, _db(args), args.force)
    n = write(_configs(args), args.out, args.format, db=_db(args))
    print(f"wrote {n} attempts to {args.out}")
    return 0
