"""Sandboxes no state directory owns any more: found by label on each engine, judged by their owning store.

A daemon stopped mid-sweep leaves its containers (and volumes) running for a resume, by design; when its state
directory is then deleted, nothing would ever stop them. Every sandbox's labels name the state directory that
owns it and the machine that directory is on (`container.ownership`); older ones name only the sweep's sandbox
directory, `<state>/sandboxes/<sweep>`, which says the same. A sandbox is an orphan when:

- its state directory is gone, or
- its store no longer needs it: the store has no such sweep, the sweep is finished, cancelled or failed, or the
  scenario is finished.

Ownership is never decided from names, and never for what is not ours to judge: a sandbox labelled with
another machine's id (or, unlabelled, on an engine that is not this machine's socket), a state directory we
cannot read (another user's), one whose lock another process holds (a live daemon or `staminad run`: it keeps
its own), or a store that cannot be read. While an existing state directory's orphans are removed, its lock is
held here, so no daemon can start on it meanwhile and take up a sandbox being removed; a look that removes
nothing takes no lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiodocker
import aiohttp
import anyio
import msgspec

from protocol import SandboxInfo
from protocol.kinds import FINAL
from staminad.sandbox.docker.container import (
    LABEL_HOST,
    LABEL_SANDBOXES,
    LABEL_SCENARIO,
    LABEL_STATE,
    LABEL_SWEEP,
    OP_TIMEOUT,
    host_id,
)
from staminad.sandbox.docker.engineconnect import Endpoint, EngineUnreachable, local_socket
from staminad.sandbox.docker.enginespec import EngineSpec
from state.lock import LOCK_NAME, lock_holder

log = logging.getLogger(__name__)
LIVE = ("running", "paused")  # sweep statuses a daemon resumes: their unfinished scenarios keep their sandboxes


class EngineUnanswered(RuntimeError):
    """The engine could not be asked for its sandboxes."""


async def listed(docker: aiodocker.Docker, engine: str) -> list[SandboxInfo]:
    """Every container and volume on the engine that carries the project's sandbox label, not yet judged."""
    volumes: Any = docker.volumes  # aiodocker's volume calls are untyped
    try:
        with anyio.fail_after(OP_TIMEOUT):
            containers = await docker.containers.list(all=True, filters={"label": [LABEL_SANDBOXES]})
            found = await volumes.list(filters={"label": [LABEL_SANDBOXES]})
    except (aiodocker.exceptions.DockerError, aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise EngineUnanswered(f"engine {engine}: {type(exc).__name__}: {exc}") from None
    out = []
    for c in containers:
        raw = c._container
        labels = raw.get("Labels") or {}
        name = (raw.get("Names") or ["?"])[0].lstrip("/")
        out.append(_info(engine, "container", name, labels, raw.get("State") == "running"))
    for v in found.get("Volumes") or []:
        out.append(_info(engine, "volume", str(v["Name"]), v.get("Labels") or {}, False))
    return out


def _info(engine: str, kind: str, name: str, labels: dict[str, str], running: bool) -> SandboxInfo:
    state = labels.get(LABEL_STATE, "")
    if not state:  # made before the state label: `<state>/sandboxes/<sweep>` says the same
        sandboxes = Path(labels.get(LABEL_SANDBOXES, ""))
        state = str(sandboxes.parent.parent) if sandboxes.parent.name == "sandboxes" else ""
    scenario = labels.get(LABEL_SCENARIO, "")
    info = SandboxInfo(
        engine=engine,
        kind=kind,
        name=name,
        state_dir=state,
        sweep=labels.get(LABEL_SWEEP, ""),
        scenario=scenario,
        running=running,
    )
    host = labels.get(LABEL_HOST)
    if host is not None and host != host_id():
        return _owned(info, f"a state directory on {host}")
    if host is None and not engine.startswith("unix://"):
        return _owned(info, "made before sandboxes named their machine, on an engine elsewhere")
    if not state:
        return _owned(info, "not in a state directory's layout")
    return info


def _owned(info: SandboxInfo, owner: str) -> SandboxInfo:
    return msgspec.structs.replace(info, owner=owner)


def _orphan(info: SandboxInfo, why: str) -> SandboxInfo:
    return msgspec.structs.replace(info, orphan=why)


@contextlib.contextmanager
def judged(
    found: list[SandboxInfo], own: Path | None, release: tuple[Path, str] | None = None, lock: bool = False
) -> Iterator[list[SandboxInfo]]:
    """`found` with each one's owner or why it is an orphan. `own`: the state directory whose lock this process
    holds already (a daemon's), judged by its store alone. `release`: (state directory, sweep) whose sandboxes
    count as orphans too, when no process uses that directory (`staminad sandboxes --prune --sweep`).

    Another state directory in use (its lock held, as `/proc/locks` says) is never judged. With `lock` (to remove
    the orphans inside the block), each other existing directory with orphans is locked here, then judged again,
    and stays locked until the block ends; without it nothing is locked, so a look never makes a start fail."""
    held: list[int] = []
    try:
        by_state: dict[str, list[SandboxInfo]] = {}
        for info in found:
            if not info.owner:
                by_state.setdefault(info.state_dir, []).append(info)
        verdicts: dict[tuple[str, str, str], SandboxInfo] = {}
        for state, items in by_state.items():
            for info in _judge_locked(Path(state), items, own, held if lock else None, release):
                verdicts[(info.engine, info.kind, info.name)] = info
        yield [verdicts.get((i.engine, i.kind, i.name), i) for i in found]
    finally:
        for fd in held:
            os.close(fd)


def _judge_locked(
    state: Path, items: list[SandboxInfo], own: Path | None, held: list[int] | None, release: tuple[Path, str] | None
) -> list[SandboxInfo]:
    """`_judge_state`; where it finds orphans of an existing directory not `own` and `held` is given, that
    directory's lock is taken (its fd joins `held`) and it is judged again under it."""
    out = _judge_state(state, items, own, release)
    if held is None or state == own or not any(i.orphan for i in out) or not os.path.isdir(state):
        return out
    try:
        fd = os.open(state / LOCK_NAME, os.O_RDONLY)
    except FileNotFoundError:
        return out  # no daemon or run ever took it (an in-process sweep of a test): none can be starting there
    except OSError as exc:
        return [_owned(i, f"state directory {state} cannot be read ({exc.strerror})") for i in items]
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return [_owned(i, f"its state directory {state} is in use (a daemon or run keeps it)") for i in items]
    held.append(fd)
    return _judge_state(state, items, own, release, locked=True)


def _judge_state(
    state: Path, items: list[SandboxInfo], own: Path | None, release: tuple[Path, str] | None, locked: bool = False
) -> list[SandboxInfo]:
    """One state directory's sandboxes, judged by its store (see the module docstring); `locked`: its lock is
    held here."""
    try:
        os.stat(state)
    except (FileNotFoundError, NotADirectoryError):
        return [_orphan(i, f"its state directory {state} is gone") for i in items]
    except OSError as exc:
        return [_owned(i, f"state directory {state} cannot be read ({exc.strerror})") for i in items]
    holder = lock_holder(state) if state != own and not locked else None
    if holder is not None:  # a live daemon or run: it keeps its own
        return [_owned(i, f"its state directory {state} is in use (a {holder[1]}, pid {holder[0]})") for i in items]
    db = state / "staminad.db"
    if not db.exists():  # a directory laid out by hand or by a test, or a store being made: not ours to judge
        return [_owned(i, f"state directory {state} holds no store") for i in items]
    try:
        needed, sweeps = _needed(db)
    except sqlite3.Error as exc:
        return [_owned(i, f"its store {db} cannot be read ({exc})") for i in items]
    out = []
    for i in items:
        status = sweeps.get(i.sweep)
        if release is not None and (state, i.sweep) == release:
            out.append(_orphan(i, f"its sweep {i.sweep} of {state} was released (--sweep {i.sweep})"))
        elif status is None:
            out.append(_orphan(i, f"its store {db} has no sweep {i.sweep}"))
        elif status not in LIVE:
            out.append(_orphan(i, f"its sweep {i.sweep} is {status}"))
        elif (i.sweep, i.scenario) not in needed:
            out.append(_orphan(i, f"its scenario {i.scenario} of sweep {i.sweep} is finished or unknown"))
        else:
            out.append(_owned(i, f"sweep {i.sweep} ({status}) of {state}, kept for its resume"))
    return out


def _needed(db: Path) -> tuple[set[tuple[str, str]], dict[str, str]]:
    """(sweep, scenario label) of every unfinished scenario of a running or paused sweep; each sweep's status."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        sweeps = {str(n): str(s) for n, s in conn.execute("SELECT name, status FROM sweeps")}
        rows = conn.execute(
            "SELECT w.name, c.name, s.seed, s.status FROM scenarios s JOIN configurations c ON c.id = s.config_id "
            "JOIN sweeps w ON w.id = c.sweep_id WHERE w.status IN ('running', 'paused')"
        ).fetchall()
    finally:
        conn.close()
    return {(str(w), f"{c}/{seed}") for w, c, seed, status in rows if status not in FINAL}, sweeps


async def remove(docker: aiodocker.Docker, orphans: list[SandboxInfo]) -> list[SandboxInfo]:
    """Remove the orphans (containers first: a volume in use cannot go), one log line each; those removed."""
    volumes: Any = docker.volumes
    gone = []
    for info in sorted(orphans, key=lambda i: i.kind != "container"):
        try:
            with anyio.fail_after(OP_TIMEOUT):
                if info.kind == "container":
                    await (await docker.containers.get(info.name)).delete(force=True, v=False)
                else:
                    await (await volumes.get(info.name)).delete()
        except aiodocker.exceptions.DockerError as exc:
            if exc.status != 404:
                log.warning("cannot remove orphaned sandbox %s %s on %s: %s", info.kind, info.name, info.engine, exc)
                continue
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.warning("cannot remove orphaned sandbox %s %s on %s: %s", info.kind, info.name, info.engine, exc)
            continue
        log.info("removed orphaned sandbox %s %s on %s: %s", info.kind, info.name, info.engine, info.orphan)
        gone.append(info)
    return gone


class Survey(msgspec.Struct, frozen=True, kw_only=True):
    """What a look over the engines found: every sandbox, judged; those removed; the engines that did not answer."""

    sandboxes: tuple[SandboxInfo, ...] = ()
    removed: tuple[SandboxInfo, ...] = ()
    unanswered: tuple[str, ...] = ()  # one line per engine that could not be asked

    @property
    def orphans(self) -> tuple[SandboxInfo, ...]:
        """The orphans still there (found and not removed)."""
        gone = {(r.engine, r.kind, r.name) for r in self.removed}
        return tuple(s for s in self.sandboxes if s.orphan and (s.engine, s.kind, s.name) not in gone)


async def survey(
    engines: list[EngineSpec], own: Path | None, prune: bool, release: tuple[Path, str] | None = None
) -> Survey:
    """Every sandbox of the project on `engines`, judged (`judged`); with `prune`, the orphans removed."""
    found: list[SandboxInfo] = []
    removed: list[SandboxInfo] = []
    unanswered: list[str] = []
    for spec in engines:
        endpoint = Endpoint(spec)
        try:
            client = endpoint.client()
            items = await listed(client, spec.url)
            with judged(items, own, release, lock=prune) as verdicts:
                found += verdicts
                if prune:
                    removed += await remove(client, [v for v in verdicts if v.orphan])
        except (EngineUnanswered, EngineUnreachable) as exc:
            unanswered.append(str(exc))
        finally:
            await endpoint.aclose()
    return Survey(sandboxes=tuple(found), removed=tuple(removed), unanswered=tuple(unanswered))


def engines_used(state_dir: Path | None, engines: list[EngineSpec]) -> list[EngineSpec]:
    """The engines a state directory's sweeps use: this machine's, `engines` (`--engine`), and those its stored
    sweeps name in `[run] engines`; each once."""
    out = {local_socket(): EngineSpec(url=local_socket())}
    for spec in engines:
        out.setdefault(spec.url, spec)
    db = state_dir / "staminad.db" if state_dir is not None else None
    if db is not None and db.exists():
        with contextlib.suppress(sqlite3.Error, msgspec.ValidationError, msgspec.DecodeError):
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
            try:
                configs = [str(c) for (c,) in conn.execute("SELECT config FROM sweeps")]
            finally:
                conn.close()
            for config in configs:
                run = msgspec.json.decode(config).get("run") or {}
                for spec in msgspec.convert(run.get("engines") or [], list[EngineSpec]):
                    out.setdefault(spec.url, spec)
    return list(out.values())


__all__ = ["LIVE", "EngineUnanswered", "Survey", "engines_used", "judged", "listed", "remove", "survey"]
