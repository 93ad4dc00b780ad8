"""The HTTP side: a stdlib `ThreadingHTTPServer` whose handler hands each request to one `App`, and `main`.

Run: python3 -m refserver --config config.json --port 8000 (the package as the reference agent copies it)
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .app import App

MAX_BODY = 1 << 20


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without TCP_NODELAY, Nagle's algorithm and the
    # client's delayed ACK stall every keep-alive response by ~40 ms.
    disable_nagle_algorithm = True
    app: App

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._send(413, {"error": "body too large"})
            return
        raw = self.rfile.read(length) if length else b""
        status, payload = self.app.handle(self.command, self.path, raw)
        self._send(status, payload)

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve


def make_server(app: App, host: str, port: int) -> ThreadingHTTPServer:
    handler = type("Handler", (_Handler,), {"app": app})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="StaminaBench reference server")
    ap.add_argument("--config", required=True, help="JSON file: {schema, bugs, aliases}")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="0.0.0.0")
    args = ap.parse_args(argv)
    with open(args.config, encoding="utf-8") as fh:
        app = App(json.load(fh))
    serve(make_server(app, args.host, args.port))
    return 0


def serve(server: ThreadingHTTPServer) -> None:
    """Serve until interrupted, then release the port."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
