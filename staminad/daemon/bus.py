"""The event bus: the engine publishes without ever waiting; each subscriber has a bounded queue.

A subscriber whose queue is full (it stopped reading, or reads too slowly) is dropped, so a slow
client can never block the engine. Recent events are kept in a ring for `logs`.
"""

from __future__ import annotations

import time
from collections import deque

import anyio

from protocol import Event
from protocol.events import EventData

QUEUE = 1000
RING = 2000


class Subscriber:
    def __init__(self, sweeps: tuple[str, ...], kinds: tuple[str, ...]) -> None:
        self.sweeps, self.kinds = set(sweeps), set(kinds)
        self.send, self.receive = anyio.create_memory_object_stream[Event](QUEUE)
        self.dropped = False

    def wants(self, event: Event) -> bool:
        return (not self.sweeps or event.sweep in self.sweeps) and (not self.kinds or event.kind in self.kinds)


class EventBus:
    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self.recent: deque[Event] = deque(maxlen=RING)
        self._seq = 0
        self.published = 0

    @property
    def seq(self) -> int:
        """The last event's sequence number (0 before the first)."""
        return self._seq

    def publish(self, sweep: str, data: EventData) -> None:
        self._seq += 1
        event = Event(sweep=sweep, data=data, at=time.time(), seq=self._seq)
        self.recent.append(event)
        self.published += 1
        for sub in list(self._subscribers):
            if not sub.wants(event):
                continue
            try:
                sub.send.send_nowait(event)
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._drop(sub)

    def _drop(self, sub: Subscriber) -> None:
        sub.dropped = True
        sub.send.close()
        if sub in self._subscribers:
            self._subscribers.remove(sub)

    def subscribe(self, sweeps: tuple[str, ...], kinds: tuple[str, ...]) -> Subscriber:
        sub = Subscriber(sweeps, kinds)
        self._subscribers.append(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self._drop(sub)
        sub.receive.close()

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)


__all__ = ["EventBus", "Subscriber"]
