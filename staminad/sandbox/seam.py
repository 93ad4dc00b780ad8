"""The narrow seam a runtime writes (`Box`): seven members, one of them an attribute. Everything else the engine
drives (the 23 members of `base.Sandbox`) is provided on top of it by `boxed.BoxedSandbox`, by composition.

- `paths`: where the workspace, the control directory and the agent layer are, as its processes see them;
- `describe()`: where it is, stored with the scenario;
- `open()`: ready to enclose (stage what it mounts; idempotent, run again on resume);
- `enclose(argv, env, record)`: the host command that runs `argv` inside a new enclosure with exactly `env` (and
  nothing of the daemon's), in the workspace, with the descriptors its caller passes, recording in `record` (a
  host file in the control directory, which no process inside can write) what identifies that enclosure;
- `end(record)`: end that enclosure and every process in it, bounded; the enclosure makes this reliable (a pid
  namespace, a cgroup): nothing started inside can leave it;
- `holds(record, pid)`: whether a host process runs inside that enclosure, judged by what the agent cannot shape
  (its pid namespace, say), never by its environment or process group;
- `health()`: why the runtime cannot be used now (None while it can).

How the existing runtimes map onto it (they keep their own code): `local` would be the identity enclosure
(`argv` as it is), but nothing holds its processes together, so it cannot `end` one reliably and keeps its own
tag-and-process-group clean-up (`hostprocs`); Docker's `enclose` is a `Spawn` through the container's launcher,
its `end` a `StopServer`/`EndAgent`, its `holds` a `FindListeners` by process group, its `health` the engine's
record (`docker.engineside`), and its files are bind-mounted (`hostfiles`) or in the engine's volumes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from staminad.sandbox.base import Loss, SandboxPaths


class Box(Protocol):
    """What a runtime writes (see the module docstring)."""

    paths: SandboxPaths

    def describe(self) -> dict[str, Any]: ...
    async def open(self) -> None: ...
    def enclose(self, argv: list[str], env: dict[str, str], record: Path) -> list[str]: ...
    def end(self, record: Path) -> bool: ...  # whether an enclosure was still there to end
    def holds(self, record: Path, pid: int) -> bool: ...
    async def health(self) -> Loss | None: ...


__all__ = ["Box"]
