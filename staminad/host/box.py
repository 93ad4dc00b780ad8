"""The box the daemon runs on, as one snapshot: load, memory, disks, GPUs and the sandboxes' CPU and memory.

`box_snapshot()` reads what is cheap (load average, /proc/meminfo, free space, NVML) at every call;
`SandboxSampler` asks Docker for its containers' stats, which is slow (Docker waits a second per
container), so it samples at most every `SAMPLE_EVERY` seconds, at most `MAX_SANDBOXES` containers,
and serves the cached sample between. GPUs come from NVML through nvidia-ml-py, imported lazily: where
it is not installed, or no driver answers, the snapshot says so (`Gpus.available` False with the
reason) and carries no devices. The metrics, the `/ops` page and the TUI box screen all read this one shape.
"""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec

from staminad.sandbox.docker.container import LABEL_SANDBOXES

SAMPLE_EVERY = 15.0  # seconds between two Docker stats samples; scrapes in between get the cached one
MAX_SANDBOXES = 64  # containers sampled per round (the label set of the per-sandbox series stays bounded)
STATS_TIMEOUT = 10.0  # seconds one container's stats may take
STATS_PARALLEL = 8


class Disk(msgspec.Struct, frozen=True, kw_only=True):
    name: str  # "state" (the state directory) or "docker" (Docker's data root)
    path: str
    total_bytes: int
    free_bytes: int
    readonly: bool = False


class GpuProcess(msgspec.Struct, frozen=True, kw_only=True):
    pid: int
    name: str  # the process's command name, "" when it cannot be read (another PID namespace)
    used_memory_bytes: int


class Gpu(msgspec.Struct, frozen=True, kw_only=True):
    index: int
    name: str
    utilization: float  # percent of the last sample period the GPU was busy
    memory_used_bytes: int
    memory_total_bytes: int
    processes: tuple[GpuProcess, ...] = ()


class Gpus(msgspec.Struct, frozen=True, kw_only=True):
    available: bool
    reason: str = ""  # why not, when not available
    devices: tuple[Gpu, ...] = ()


class SandboxStats(msgspec.Struct, frozen=True, kw_only=True):
    name: str  # the container's name
    cpu_percent: float  # of one core (200 = two cores busy)
    memory_bytes: int
    memory_limit_bytes: int


class Box(msgspec.Struct, frozen=True, kw_only=True):
    at: float  # unix time of the snapshot
    load: tuple[float, float, float]  # 1, 5 and 15 minute load averages
    cpus: int
    memory_total_bytes: int
    memory_available_bytes: int
    disks: tuple[Disk, ...]
    gpus: Gpus
    sandboxes: tuple[SandboxStats, ...] = ()
    sandboxes_at: float = 0.0  # when the sandboxes were sampled (0: never)


def box_snapshot(disks: dict[str, Path], sandboxes: tuple[SandboxStats, ...] = (), sampled: float = 0.0) -> Box:
    """The box now; `disks` names the directories whose file system's free space is reported."""
    total, available = _memory()
    return Box(
        at=time.time(),
        load=os.getloadavg(),
        cpus=os.cpu_count() or 1,
        memory_total_bytes=total,
        memory_available_bytes=available,
        disks=tuple(d for name, path in disks.items() if (d := _disk(name, path)) is not None),
        gpus=gpus(),
        sandboxes=sandboxes,
        sandboxes_at=sampled,
    )


def _memory() -> tuple[int, int]:
    fields: dict[str, int] = {}
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                key, _, rest = line.partition(":")
                fields[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return 0, 0
    return fields.get("MemTotal", 0), fields.get("MemAvailable", fields.get("MemFree", 0))


def _disk(name: str, path: Path) -> Disk | None:
    try:
        st = os.statvfs(path)
    except OSError:  # not there (yet), or not ours to read: left out rather than reported as empty
        return None
    return Disk(
        name=name,
        path=str(path),
        total_bytes=st.f_blocks * st.f_frsize,
        free_bytes=st.f_bavail * st.f_frsize,
        readonly=bool(st.f_flag & os.ST_RDONLY),
    )


def gpus() -> Gpus:
    """The GPUs NVML sees, or why none are reported."""
    try:
        # nvidia-ml-py: optional (a GPU box's package), imported by name so the type checker needs no stubs
        pynvml: Any = importlib.import_module("pynvml")
    except ImportError:
        return Gpus(available=False, reason="no NVML: nvidia-ml-py is not installed (pip install nvidia-ml-py)")
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, _DriverNotLoaded, ...: no GPU driver here
        return Gpus(available=False, reason=f"no NVML: it cannot start ({exc})")
    try:
        devices = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            devices.append(
                Gpu(
                    index=index,
                    name=_text(pynvml.nvmlDeviceGetName(handle)),
                    utilization=float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu),
                    memory_used_bytes=int(memory.used),
                    memory_total_bytes=int(memory.total),
                    processes=_gpu_processes(pynvml, handle),
                )
            )
        return Gpus(available=True, devices=tuple(devices))
    except Exception as exc:  # noqa: BLE001 - a device that vanished or errs mid-read: say so rather than half a picture
        return Gpus(available=False, reason=f"NVML failed: {exc}")
    finally:
        pynvml.nvmlShutdown()


def _gpu_processes(pynvml: Any, handle: Any) -> tuple[GpuProcess, ...]:
    found = []
    for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        for p in getattr(pynvml, getter)(handle):
            used = p.usedGpuMemory if isinstance(p.usedGpuMemory, int) else 0  # None where NVML cannot tell
            found.append(GpuProcess(pid=int(p.pid), name=_command(int(p.pid)), used_memory_bytes=used))
    return tuple(found)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


class SandboxSampler:
    """This daemon's sandbox containers' CPU and memory, sampled at most every SAMPLE_EVERY seconds."""

    def __init__(self, sandboxes: Path) -> None:
        self.sandboxes = str(sandboxes.resolve())  # our containers carry a path under it as their label
        self.last: tuple[SandboxStats, ...] = ()
        self.at = 0.0  # unix time of `last`
        self.docker_root: Path | None = None
        # The local engine as the last round found it: (its URL, whether it answered); None without Docker here.
        self.engine: tuple[str, bool] | None = None
        self._lock = anyio.Lock()

    async def sample(self) -> tuple[SandboxStats, ...]:
        """The latest sample, taken now if the cached one is older than SAMPLE_EVERY (Docker absent: none)."""
        async with self._lock:  # concurrent scrapes share one round
            if time.time() - self.at >= SAMPLE_EVERY:
                self.last = await self._round()
                self.at = time.time()
            return self.last

    async def _round(self) -> tuple[SandboxStats, ...]:
        try:
            import aiodocker

            docker = aiodocker.Docker()
        except Exception:  # noqa: BLE001 - no Docker here: no sandbox containers to report
            return ()
        try:
            with anyio.fail_after(STATS_TIMEOUT):
                if self.docker_root is None:
                    info = await docker.system.info()
                    self.docker_root = Path(info.get("DockerRootDir") or "/var/lib/docker")
                listed = await docker.containers.list(filters={"label": [LABEL_SANDBOXES]})
            self.engine = (local_engine(), True)
            ours = [c for c in listed if str(c["Labels"].get(LABEL_SANDBOXES, "")).startswith(self.sandboxes)]
            found: list[SandboxStats] = []
            limiter = anyio.CapacityLimiter(STATS_PARALLEL)

            async def one(container: Any) -> None:
                async with limiter:
                    with anyio.move_on_after(STATS_TIMEOUT):
                        stats = await container.stats(stream=False)
                        found.append(_stats(container, stats[0] if isinstance(stats, list) else stats))

            async with anyio.create_task_group() as tg:
                for container in ours[:MAX_SANDBOXES]:
                    tg.start_soon(one, container)
            return tuple(sorted(found, key=lambda s: s.name))
        except Exception:  # noqa: BLE001 - the engine went away mid-round: nothing this time, asked again next round
            self.engine = (local_engine(), False)
            return ()
        finally:
            await docker.close()


def local_engine() -> str:
    """The URL of the Docker engine a client here reaches by default (DOCKER_HOST, else the socket)."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def _stats(container: Any, stats: dict[str, Any]) -> SandboxStats:
    """CPU as `docker stats` computes it: the container's share of the host's CPU time over the sample."""
    cpu, pre = stats.get("cpu_stats") or {}, stats.get("precpu_stats") or {}
    used = (cpu.get("cpu_usage") or {}).get("total_usage", 0) - (pre.get("cpu_usage") or {}).get("total_usage", 0)
    system = cpu.get("system_cpu_usage", 0) - pre.get("system_cpu_usage", 0)
    cores = cpu.get("online_cpus") or 1
    memory = stats.get("memory_stats") or {}
    cache = (memory.get("stats") or {}).get("inactive_file", 0)  # page cache, as `docker stats` leaves out
    try:
        name = str(container["Names"][0])  # as listed
    except (KeyError, IndexError):
        name = str(container.id)[:12]
    return SandboxStats(
        name=name.lstrip("/"),
        cpu_percent=round(used / system * cores * 100, 2) if used > 0 and system > 0 else 0.0,
        memory_bytes=max(0, int(memory.get("usage", 0)) - int(cache)),
        memory_limit_bytes=int(memory.get("limit", 0)),
    )


__all__ = [
    "MAX_SANDBOXES",
    "SAMPLE_EVERY",
    "Box",
    "Disk",
    "Gpu",
    "GpuProcess",
    "Gpus",
    "SandboxSampler",
    "SandboxStats",
    "box_snapshot",
    "gpus",
]
