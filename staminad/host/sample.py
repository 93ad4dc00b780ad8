"""The machine at one moment as the control socket carries it (`BoxSample`), from `box.box_snapshot`.

The box is read in one place (`box`: load, memory, the disks the daemon writes to, the GPUs through NVML
when nvidia-ml-py and a driver are present); this module only puts a snapshot into the wire's shape for
the ops page and the TUI's box screen, so the metrics and the ops view always agree.
"""

from __future__ import annotations

from pathlib import Path

from protocol.messages import BoxSample, DiskUsage, GpuInfo
from staminad.host.box import Box, Gpus, box_snapshot


def _gpu_infos(found: Gpus) -> tuple[GpuInfo, ...]:
    return tuple(
        GpuInfo(
            index=g.index,
            name=g.name,
            util=g.utilization,
            memory_used=g.memory_used_bytes,
            memory_total=g.memory_total_bytes,
            processes=tuple(f"{p.pid} {p.name or '?'} ({p.used_memory_bytes >> 20} MiB)" for p in g.processes),
        )
        for g in found.devices
    )


def as_sample(box: Box) -> BoxSample:
    """A snapshot in the wire's shape."""
    return BoxSample(
        at=box.at,
        load=box.load,
        cpus=box.cpus,
        memory_total=box.memory_total_bytes,
        memory_available=box.memory_available_bytes,
        disks=tuple(
            DiskUsage(role=d.name, path=d.path, total=d.total_bytes, free=d.free_bytes, readonly=d.readonly)
            for d in box.disks
        ),
        gpus=_gpu_infos(box.gpus),
        gpu_note="" if box.gpus.available else box.gpus.reason,
    )


def sample_box(disks: dict[str, Path]) -> BoxSample:
    """Load, memory, the named `disks` (role -> a path on it) and the GPUs, now."""
    return as_sample(box_snapshot(disks))


__all__ = ["as_sample", "sample_box"]
