"""A transport that calls the reference server's logic directly, without sockets.

Used by `staminad validate`, which runs hundreds of thousands of requests through the oracle and
its mutants: the socket path is exercised separately (tests, `suite run`, the engine), while this
one keeps the validation gate fast enough for CI.
"""

from __future__ import annotations

from staminad.reference.server import App


class AppTransport:
    def __init__(self, app: App) -> None:
        self.app = app

    def request(
        self, method: str, path: str, body: bytes | None, content_type: str | None = "application/json"
    ) -> tuple[int, bytes]:
        """The reference logic's answer; it reads every body as JSON whatever its Content-Type, as many servers do."""
        import json

        status, payload = self.app.handle(method, path, body or b"")
        return status, json.dumps(payload).encode()
