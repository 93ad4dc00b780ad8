"""Event-loop lag probe, for benchmarks: off unless `STAMINAD_LOOP_PROBE` names a file.

Two measurements, appended to that file once a second as one JSON line each:

- lag: a task sleeps 10 ms in a loop; how late each wake-up came is how long something else held the loop,
  and the loop thread's CPU time over that sleep (a late wake-up with little CPU is a loop that waited: for
  the GIL, or for a core on a loaded machine; with much, one that ran callbacks);
- what held it (only with `STAMINAD_LOOP_PROBE_STACKS` set): a thread samples the loop thread's stack every
  5 ms and counts, per second, the innermost frames of this project (and the frame they call into) of every
  sample not waiting in the selector.

Neither changes what the daemon does, but the sampler is not free: it wakes 200 times a second and takes the
GIL each time, which the loop must hand over; so timings are measured without it, and stacks in runs of their own.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType

import anyio

ENV = "STAMINAD_LOOP_PROBE"
STACKS_ENV = "STAMINAD_LOOP_PROBE_STACKS"  # set (to anything): sample the stacks too
TICK = 0.01  # the lag task's sleep
SAMPLE = 0.005  # the stack sampler's period
IDLE = ("select", "poll", "epoll", "_run_once")  # the loop waiting, not held
DEPTH = 6  # frames of a sampled stack kept, innermost first


def _stack(frame: FrameType | None) -> str | None:
    """The innermost frames of a sample as `file:function` from the inside out; None when the loop is idle."""
    if frame is None or frame.f_code.co_name in IDLE:
        return None
    parts: list[str] = []
    while frame is not None and len(parts) < DEPTH:
        code = frame.f_code
        parts.append(f"{Path(code.co_filename).name}:{code.co_name}")
        frame = frame.f_back
    return " < ".join(parts)


class LoopProbe:
    def __init__(self, path: Path, stacks: bool = False) -> None:
        self.path, self.sample_stacks = path, stacks
        self.lags: list[float] = []
        self.cpu: list[float] = []  # the loop thread's CPU seconds over each tick
        self.stacks: Counter[str] = Counter()
        self.samples = 0
        self._lock = threading.Lock()
        self._loop_thread = threading.get_ident()
        self._done = threading.Event()

    def _sample(self) -> None:
        while not self._done.wait(SAMPLE):
            frame = sys._current_frames().get(self._loop_thread)
            stack = _stack(frame)
            with self._lock:
                self.samples += 1
                if stack is not None:
                    self.stacks[stack] += 1

    def _flush(self) -> None:
        with self._lock:
            lags, cpu, stacks, samples = self.lags, self.cpu, self.stacks, self.samples
            self.lags, self.cpu, self.stacks, self.samples = [], [], Counter(), 0
        line = {"t": time.time(), "lags": [round(x, 5) for x in lags], "samples": samples}
        line["cpu"] = [round(x, 5) for x in cpu]
        line["busy"] = dict(stacks.most_common(15))
        with self.path.open("a") as f:
            f.write(json.dumps(line) + "\n")

    async def serve(self) -> None:
        if self.sample_stacks:
            threading.Thread(target=self._sample, daemon=True, name="loop-probe").start()
        flushed = time.monotonic()
        try:
            while True:
                t0, c0 = time.monotonic(), time.thread_time()
                await anyio.sleep(TICK)
                now, c1 = time.monotonic(), time.thread_time()
                with self._lock:
                    self.lags.append(max(0.0, now - t0 - TICK))
                    self.cpu.append(c1 - c0)
                if now - flushed >= 1.0:
                    flushed = now
                    self._flush()
        finally:
            self._done.set()


def probe_from_env() -> LoopProbe | None:
    """The probe `STAMINAD_LOOP_PROBE` asks for (made in the loop's thread), or None."""
    path = os.environ.get(ENV)
    return LoopProbe(Path(path), bool(os.environ.get(STACKS_ENV))) if path else None
