"""What a container runtime reads of a sweep's `[run]` settings, apart from the sandbox contract (`base`) so that
the runtime registry (`runtimes`) can name it without importing the sandboxes."""

from __future__ import annotations

from typing import Protocol


class ContainerSettings(Protocol):
    """What a container runtime reads of a sweep's `[run]` settings (the engine's RunSettings has these)."""

    @property
    def image(self) -> str: ...

    @property
    def cpus(self) -> float: ...

    @property
    def memory_mb(self) -> int: ...

    @property
    def pids(self) -> int: ...
