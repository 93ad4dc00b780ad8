"""A child's output read line by line on a thread, so each wait for a line is bounded."""

from __future__ import annotations

import queue
import threading
from typing import IO


class Lines:
    """A child's stdout read on a thread, so each wait for a line is bounded."""

    def __init__(self, stream: IO[str]) -> None:
        self.q: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self.q.put(line)

    def wait_for(self, needle: str, timeout: float = 120) -> str:
        """The next line holding `needle`, failing the test after `timeout` seconds without one."""
        while True:
            try:
                line = self.q.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no line with {needle!r} within {timeout} s; saw {self.seen[-5:]}") from None
            self.seen.append(line)
            if needle in line:
                return line
