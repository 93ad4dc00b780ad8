"""A replaying server: the reference server's logic records every answer, then answers from that table only.

It stands for a server (or an agent hard-coding what the feedback quoted) that passes a retry by
replaying the answers to the attempt before instead of fixing its logic. Requests are keyed by
everything sent since the last `POST /reset`, so a recorded attempt replays exactly (a store's
answers depend on what came before); a request never seen in that order gets the answer last
recorded for the same request, else 404 (the answer most "must not exist" checks want).
"""

from __future__ import annotations

import json
from typing import Any

from staminad.reference.server import App

Request = tuple[str, str, bytes]
NOT_RECORDED = (404, {"error": "not recorded"})


class ReplayServer(App):
    """`recording` True: the reference server, keeping each answer; False: answers from the table alone."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.recording = True
        self.table: dict[tuple[Request, ...], tuple[int, Any]] = {}
        self.loose: dict[Request, tuple[int, Any]] = {}
        self.replayed = 0  # answers found in the table while replaying
        self._since_reset: list[Request] = []

    def handle(self, method: str, path: str, raw: bytes) -> tuple[int, Any]:
        request = (method, path, raw)
        if (method, path) == ("POST", "/reset"):
            self._since_reset = []
        self._since_reset.append(request)
        key = tuple(self._since_reset)
        if self.recording:
            status, payload = super().handle(method, path, raw)
            answer = (status, json.loads(json.dumps(payload)))  # a copy: the store's objects change later
            self.table[key] = self.loose[request] = answer
            return answer
        found = self.table.get(key) or self.loose.get(request)
        self.replayed += found is not None
        return found or NOT_RECORDED
