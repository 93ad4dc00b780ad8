"""Port allocation for servers under test: unique within the daemon and free on the host.

A port is handed out only if no other scenario holds it and a bind on 127.0.0.1 succeeds; it is
returned with `release`, which also checks that nothing still listens on it.
"""

from __future__ import annotations

import socket


class PortsExhausted(RuntimeError):
    """Every port of the configured range is taken."""


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


class PortAllocator:
    def __init__(self, low: int = 20000, high: int = 29999) -> None:
        if not 1024 <= low <= high <= 65535:
            raise ValueError(f"bad port range {low}-{high}")
        self.low, self.high = low, high
        self.held: set[int] = set()
        self._next = low

    def allocate(self) -> int:
        span = self.high - self.low + 1
        for _ in range(span):
            port = self._next
            self._next = self.low + (self._next - self.low + 1) % span
            if port not in self.held and port_is_free(port):
                self.held.add(port)
                return port
        raise PortsExhausted(f"no free port in {self.low}-{self.high}")

    def release(self, port: int) -> None:
        self.held.discard(port)
