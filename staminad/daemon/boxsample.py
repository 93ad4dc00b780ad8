"""The machine at one moment (`BoxSample`): load, memory, the disks the daemon writes to, and the GPUs.

Cheap enough to take every few seconds: `os.getloadavg`, `/proc/meminfo`, `statvfs`, and NVML when the
`pynvml` module (nvidia-ml-py) and a driver are present; without them the GPU panel says why instead
("no NVML"). Every read that can fail on an odd machine leaves its field empty, never raises.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
from pathlib import Path
from typing import Any

from protocol.messages import BoxSample, DiskUsage, GpuInfo

MEMINFO = Path("/proc/meminfo")


def _memory() -> tuple[int, int]:
    """(total, available) bytes from /proc/meminfo ((0, 0) where there is none)."""
    fields: dict[str, int] = {}
    try:
        for line in MEMINFO.read_text().splitlines():
            name, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                fields[name] = int(parts[0]) * 1024  # kB
    except OSError:
        return 0, 0
    return fields.get("MemTotal", 0), fields.get("MemAvailable", fields.get("MemFree", 0))


def disk(role: str, path: Path) -> DiskUsage | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return DiskUsage(
        role=role,
        path=str(path),
        total=st.f_blocks * st.f_frsize,
        free=st.f_bavail * st.f_frsize,
        readonly=bool(st.f_flag & os.ST_RDONLY),
    )


def gpus() -> tuple[tuple[GpuInfo, ...], str]:
    """The GPUs NVML sees, or () with why none are listed."""
    try:
        nvml: Any = importlib.import_module("pynvml")  # optional: the nvidia-ml-py package
    except ImportError:
        return (), "no NVML (the nvidia-ml-py package is not installed)"
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError: no driver, no device
        return (), f"no NVML: {exc}"
    try:
        out = []
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            name = nvml.nvmlDeviceGetName(h)
            mem = nvml.nvmlDeviceGetMemoryInfo(h)
            util = nvml.nvmlDeviceGetUtilizationRates(h)
            procs = []
            for p in nvml.nvmlDeviceGetComputeRunningProcesses(h):
                used = (getattr(p, "usedGpuMemory", 0) or 0) // (1 << 20)
                procs.append(f"{p.pid} {_comm(p.pid)} ({used} MiB)")
            out.append(
                GpuInfo(
                    index=i,
                    name=name.decode() if isinstance(name, bytes) else str(name),
                    util=float(util.gpu),
                    memory_used=int(mem.used),
                    memory_total=int(mem.total),
                    processes=tuple(procs),
                )
            )
        return tuple(out), ""
    except Exception as exc:  # a device that stops answering mid-read
        return (), f"NVML failed: {exc}"
    finally:
        with contextlib.suppress(Exception):  # nothing to do if NVML will not shut down: the sample is taken
            nvml.nvmlShutdown()


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def sample_box(disks: dict[str, Path]) -> BoxSample:
    """Load, memory, the named `disks` (role -> a path on it) and the GPUs, now."""
    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    total, available = _memory()
    found, note = gpus()
    return BoxSample(
        at=time.time(),
        load=(load[0], load[1], load[2]),
        cpus=os.cpu_count() or 1,
        memory_total=total,
        memory_available=available,
        disks=tuple(d for role, path in disks.items() if (d := disk(role, path)) is not None),
        gpus=found,
        gpu_note=note,
    )


__all__ = ["disk", "gpus", "sample_box"]
