"""The agent's code after each tested attempt, kept on the daemon's disk so that two attempts can be compared.

After an attempt is tested the engine asks its sandbox to keep the workspace's files (`Sandbox.keep_code`): a
sandbox whose files are on this disk walks its workspace (`beneath.walk_files`: no link followed, only regular
files read), a volume sandbox reads the snapshot it has just taken. Under the sandbox directory that gives

- `code/<job>.json`: the attempt's listing (`KeptCode`): each path with its kind, size and, where it was read,
  the SHA-256 of its content;
- `code/blobs/<sha256>`: each distinct text content once, zlib-compressed, so a file left unchanged costs
  nothing more per attempt.

The workspace is the agent's, so all of it is bounded: directories of dependencies, caches and tool state
(`loc.SKIP_DIRS`, and every hidden directory, `.home` among them) are not entered; a file over MAX_FILE_BYTES is
listed with its size only; one with a NUL byte or not UTF-8 is binary (listed with its hash, its content not
kept); past MAX_FILES files or MAX_KEPT_BYTES of text in one listing, or SCENARIO_BYTES of blobs for the
scenario, the rest is listed without content (or not at all) and the listing says it was cut. A workspace on
this disk is walked breadth first (a directory's files before anything below it) and at most DIR_ENTRIES entries
of one directory are looked at (a snapshot's members likewise), so a directory of 100,000 files costs its own
listing a cut, not the code beside it. Nothing here ever fails an attempt: what could not be kept is said in the
listing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import stat
import tarfile
import time
import zlib
from collections import Counter, deque
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

import msgspec

from staminad.sandbox.inside.beneath import MAX_DEPTH, WalkBudget, create_file, ensure_dir, open_root, read_file
from staminad.sandbox.inside.loc import SKIP_DIRS
from staminad.sandbox.keptbytes import remember, stored_bytes

CODE_DIR = "code"  # below the sandbox directory
BLOBS = f"{CODE_DIR}/blobs"
MAX_FILES = 2000  # files listed per attempt
MAX_FILE_BYTES = 256 << 10  # a text file larger than this is listed by size only
MAX_KEPT_BYTES = 8 << 20  # bytes of text read per attempt
SCENARIO_BYTES = 256 << 20  # compressed bytes of blobs per scenario
MAX_ENTRIES = 100_000  # directory entries (or archive members) looked at per attempt
DIR_ENTRIES = 1000  # of them in one directory: one directory of junk cannot use up the walk
MAX_SECONDS = 20.0
LISTING_LIMIT = 4 << 20  # bytes of a listing read back
KINDS = ("text", "binary", "large", "link", "other")
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # O_NONBLOCK: a FIFO planted meanwhile
_JOB = re.compile(r"t\d{4}-a\d{2}-i\d{2}")
_SHA = re.compile(r"[0-9a-f]{64}")


class KeptFile(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One workspace entry: `kind` (text, binary, large, link, other), its size, its content's hash where read,
    and whether that content is in the blobs (only text is, within the bounds)."""

    kind: str
    size: int = 0
    sha: str = ""
    kept: bool = False


class KeptCode(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An attempt's workspace as kept: its files by relative path, what was left out, or why nothing was kept."""

    taken_at: float
    files: dict[str, KeptFile] = {}
    cut: str = ""  # why the listing or its contents are incomplete ("" when whole)
    skipped: str = ""  # why no listing was taken at all ("" when one was)


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(KeptCode).decode


def job_id(turn: int, attempt: int, infra_try: int) -> str:
    """The name of an attempt's harness job (its directory under control/jobs, its listing here)."""
    return f"t{turn:04d}-a{attempt:02d}-i{infra_try:02d}"


def _skipped_dir(parts: tuple[str, ...]) -> bool:
    """Whether a path lies inside a directory a listing does not enter (dependencies, caches, hidden ones)."""
    return any(p in SKIP_DIRS or p.startswith(".") for p in parts[:-1])


class _Keeper:
    """Builds one listing, writing each new text content to the blobs as it goes (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)  # the sandbox's directory: the daemon's, never the agent's
        ensure_dir(root, BLOBS)  # real directories beneath the sandbox's: a link there is moved aside, not followed
        self.blobs = root / BLOBS
        self.files: dict[str, KeptFile] = {}
        self.cuts: list[str] = []
        self.read = 0
        self.stored = stored_bytes(self.blobs)  # what the scenario's earlier attempts kept

    def full(self) -> bool:
        if len(self.files) >= MAX_FILES:
            self._cut(f"only the first {MAX_FILES} files are listed")
            return True
        return False

    def crowded(self, prefix: str) -> None:
        """Say that directory `prefix` has more than DIR_ENTRIES entries, of which the rest are left out."""
        self._cut(f"{prefix or 'the workspace'}: only {DIR_ENTRIES} of its entries are looked at")

    def _cut(self, why: str) -> None:
        if why not in self.cuts:
            self.cuts.append(why)

    def entry(self, rel: str, kind: str, size: int = 0) -> None:
        self.files[rel] = KeptFile(kind=kind, size=size)

    def file(self, rel: str, size: int, read: Callable[[int], bytes]) -> None:
        """A regular file of `size` bytes (as listed); `read(n)` gives at most n bytes of it from its start."""
        if size > MAX_FILE_BYTES:
            self.entry(rel, "large", size)
            return
        if self.read + size > MAX_KEPT_BYTES:
            self._cut(f"files past {MAX_KEPT_BYTES >> 20} MiB of text are listed by size only")
            self.entry(rel, "large", size)
            return
        data = read(MAX_FILE_BYTES + 1)
        self.read += len(data)
        if len(data) > MAX_FILE_BYTES:  # it grew since it was listed
            self.entry(rel, "large", len(data))
            return
        sha = hashlib.sha256(data).hexdigest()
        if b"\0" in data or not _is_utf8(data):
            self.files[rel] = KeptFile(kind="binary", size=len(data), sha=sha)
            return
        self.files[rel] = KeptFile(kind="text", size=len(data), sha=sha, kept=self._store(sha, data))

    def _store(self, sha: str, data: bytes) -> bool:
        blob = self.blobs / sha
        if blob.exists():
            return True
        packed = zlib.compress(data, 6)
        if self.stored + len(packed) > SCENARIO_BYTES:
            self._cut(f"the scenario's kept code is over {SCENARIO_BYTES >> 20} MiB: new contents are not kept")
            return False
        try:
            _put(self.root, f"{BLOBS}/{sha}", packed)
        except OSError as exc:
            self._cut(f"a content could not be written: {exc}"[:200])
            return False
        self.stored += len(packed)
        return True

    def listing(self, budget_exhausted: str) -> KeptCode:
        remember(self.blobs, self.stored)
        if budget_exhausted:
            self._cut(f"the walk stopped after {MAX_ENTRIES} entries or {MAX_SECONDS:.0f} s ({budget_exhausted})")
        return KeptCode(taken_at=time.time(), files=self.files, cut="; ".join(self.cuts))


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def _read_fd(fd: int, limit: int) -> bytes:
    chunks, got = [], 0
    while got < limit:
        chunk = os.pread(fd, min(1 << 16, limit - got), got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _names(dir_fd: int, prefix: str, budget: WalkBudget, keeper: _Keeper) -> list[str]:
    """The first DIR_ENTRIES names of a directory, sorted (what `scandir` gives first: reading all of a directory
    of millions costs what it holds); one cut when it has more."""
    names: list[str] = []
    try:
        with os.scandir(dir_fd) as entries:
            for entry in entries:
                if len(names) >= DIR_ENTRIES:
                    keeper.crowded(prefix)
                    break
                if not budget.spend():
                    break
                names.append(entry.name)
    except OSError:
        pass  # an unreadable directory: what was read of it is listed
    return sorted(names)


def _open_below(root_fd: int, rel: str) -> int:
    """A descriptor of the directory `rel` below `root_fd`, opened one component at a time, never through a link."""
    fd = os.dup(root_fd)
    for part in filter(None, rel.split("/")):
        try:
            sub = os.open(part, _DIR, dir_fd=fd)
        finally:
            os.close(fd)
        fd = sub
    return fd


def _breadth_first(
    workspace: Path, budget: WalkBudget, keeper: _Keeper
) -> Iterator[tuple[str, os.stat_result, int | None]]:
    """(relative path, lstat, read descriptor or None) below `workspace`, shallowest first: every file of a directory
    before anything deeper, so the code an agent keeps near the top is listed whatever fills the tree below it;
    at most DIR_ENTRIES entries of one directory; links never followed, skipped directories never entered."""
    root_fd = open_root(workspace)
    pending: deque[str] = deque([""])
    try:
        while pending and not budget.exhausted:
            prefix = pending.popleft()
            try:
                dir_fd = _open_below(root_fd, prefix)
            except OSError:
                continue  # replaced meanwhile (a link now): not entered
            try:
                for name in _names(dir_fd, prefix, budget, keeper):
                    try:
                        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    except OSError:
                        continue
                    rel = prefix + name
                    if stat.S_ISDIR(st.st_mode):
                        if name not in SKIP_DIRS and not name.startswith(".") and rel.count("/") < MAX_DEPTH:
                            pending.append(rel + "/")
                    elif stat.S_ISREG(st.st_mode):
                        yield from _opened(dir_fd, name, rel, st)
                    else:
                        yield rel, st, None
            finally:
                os.close(dir_fd)
    finally:
        os.close(root_fd)


def _opened(dir_fd: int, name: str, rel: str, st: os.stat_result) -> Iterator[tuple[str, os.stat_result, int | None]]:
    try:
        fd = os.open(name, _READ, dir_fd=dir_fd)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # still a file once opened
            yield rel, st, fd
    finally:
        os.close(fd)


def keep_from_dir(workspace: Path, root: Path, job: str) -> KeptCode:
    """List (and keep the text of) `workspace` as attempt `job`'s code under `root/code`; links are never followed."""
    keeper = _Keeper(root)
    budget = WalkBudget(MAX_ENTRIES, MAX_SECONDS)
    try:
        for rel, st, fd in _breadth_first(workspace, budget, keeper):
            if keeper.full():
                break
            if stat.S_ISLNK(st.st_mode):
                keeper.entry(rel, "link")
            elif fd is None:
                keeper.entry(rel, "other", st.st_size)
            else:
                keeper.file(rel, st.st_size, functools.partial(_read_fd, fd))
    except OSError as exc:
        return _write(root, job, KeptCode(taken_at=time.time(), skipped=f"the workspace could not be read: {exc}"))
    return _write(root, job, keeper.listing(budget.exhausted))


def keep_from_archive(archive: Path, root: Path, job: str) -> KeptCode:
    """The same from a workspace snapshot (.tar.gz of its contents); members are read, never extracted."""
    keeper = _Keeper(root)
    budget = WalkBudget(MAX_ENTRIES, MAX_SECONDS)
    try:
        with tarfile.open(archive, "r|gz") as tar:
            crowds: Counter[str] = Counter()  # members seen per directory
            for member in tar:
                parts = tuple(p for p in PurePosixPath(member.name).parts if p not in ("", ".", "/"))
                parent = "/".join(parts[:-1]) + "/" if len(parts) > 1 else ""
                crowds[parent] += 1
                if crowds[parent] > DIR_ENTRIES:  # passed over (its header read, its data skipped): time bounds it
                    keeper.crowded(parent)
                    if time.monotonic() > budget.deadline:
                        budget.exhausted = "time"
                        break
                    continue
                if not budget.spend():
                    break
                if not parts or ".." in parts or member.isdir() or _skipped_dir(parts):
                    continue
                if keeper.full():
                    break
                rel = "/".join(parts)
                if member.issym() or member.islnk():
                    keeper.entry(rel, "link")
                elif not member.isreg():
                    keeper.entry(rel, "other", member.size)
                else:
                    fh = tar.extractfile(member)
                    if fh is not None:
                        keeper.file(rel, member.size, fh.read)
    except (OSError, tarfile.TarError, EOFError, zlib.error) as exc:
        return _write(root, job, KeptCode(taken_at=time.time(), skipped=f"the snapshot could not be read: {exc}"))
    return _write(root, job, keeper.listing(budget.exhausted))


def keep_nothing(root: Path, job: str, why: str) -> KeptCode:
    """Record that attempt `job`'s code was not kept, and why (say, its snapshot was skipped)."""
    return _write(root, job, KeptCode(taken_at=time.time(), skipped=why))


def _write(root: Path, job: str, listing: KeptCode) -> KeptCode:
    if not _JOB.fullmatch(job):
        raise ValueError(f"not a job id: {job!r}")
    root.mkdir(parents=True, exist_ok=True)
    ensure_dir(root, CODE_DIR)
    _put(root, f"{CODE_DIR}/{job}.json", _encode(listing))
    return listing


def _put(root: Path, rel: str, data: bytes) -> None:
    """`rel` beneath `root` holding `data`, written whole: to a fresh part file (created, never opened through a
    link), then renamed over the name (a rename replaces a link, it does not follow it)."""
    part = f"{rel}.part"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(root / part)  # a leftover of a crash (or anything put there): removed, never followed
    if not create_file(root, part, data):
        raise OSError(f"{part} could not be created")
    os.replace(root / part, root / rel)


def read_listing(root: Path, job: str) -> KeptCode | None:
    """Attempt `job`'s listing, or None when none was kept (or it cannot be read: on the local runtime the agent
    could have written anything there, so it is read without following a link, bounded, and validated)."""
    if not _JOB.fullmatch(job):
        return None
    try:
        listing = _decode(read_file(root, f"{CODE_DIR}/{job}.json", LISTING_LIMIT))
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    files = {p: f for p, f in listing.files.items() if f.kind in KINDS and _safe_path(p)}
    return msgspec.structs.replace(listing, files=files)


def _safe_path(rel: str) -> bool:
    return bool(rel) and not rel.startswith("/") and ".." not in rel.split("/")


def read_text(root: Path, sha: str) -> str | None:
    """A kept text content by its hash, or None when it is not there or is not what its hash says."""
    if not _SHA.fullmatch(sha):
        return None
    try:
        packed = read_file(root, f"{CODE_DIR}/blobs/{sha}", MAX_FILE_BYTES + 4096)
        inflater = zlib.decompressobj()
        data = inflater.decompress(packed, MAX_FILE_BYTES + 1)
    except (OSError, zlib.error):
        return None
    if hashlib.sha256(data).hexdigest() != sha:
        return None
    return data.decode(errors="replace")
