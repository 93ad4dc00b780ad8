"""One zoo server: the reference server's logic (`App`) behind one of the HTTP stacks agents pick.

Run: python benchmarks/zoo/serve.py STACK --config config.json --port PORT

Each adapter is as thin as its stack allows and is written the way an agent writes it: the stack's
defaults, no socket tuning. So the zoo measures what the suite meets in the wild (for example the
stdlib's HTTP/1.1 server writes a response's head and body in two writes with Nagle on), while
`App` keeps every zoo server correct, so each passes every suite.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from staminad.reference.server import MAX_BODY, App


def _stdlib(app: App, host: str, port: int, version: str) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = version  # "HTTP/1.1": keep-alive; "HTTP/1.0": one request per connection

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(min(length, MAX_BODY)) if length else b""
            status, payload = app.handle(self.command, self.path, raw)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()  # one write for the head ...
            self.wfile.write(data)  # ... and one for the body (wfile is unbuffered)

        do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    server.serve_forever()


def stdlib_http11(app: App, host: str, port: int) -> None:
    _stdlib(app, host, port, "HTTP/1.1")


def stdlib_http10(app: App, host: str, port: int) -> None:
    _stdlib(app, host, port, "HTTP/1.0")


def flask(app: App, host: str, port: int) -> None:
    from flask import Flask, Response, request

    web = Flask("zoo")
    methods = ["GET", "POST", "PATCH", "DELETE", "PUT"]

    @web.route("/", defaults={"path": ""}, methods=methods)
    @web.route("/<path:path>", methods=methods)
    def route(path: str) -> Response:
        target = request.full_path.rstrip("?") if request.query_string else request.path
        status, payload = app.handle(request.method, target, request.get_data())
        return Response(json.dumps(payload), status=status, mimetype="application/json")

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    web.run(host=host, port=port)  # the werkzeug development server, threaded, as `flask run` starts it


def starlette_uvicorn(app: App, host: str, port: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def route(request: Request) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        status, payload = app.handle(request.method, target, await request.body())
        return Response(json.dumps(payload), status_code=status, media_type="application/json")

    web = Starlette(routes=[Route("/{path:path}", route, methods=["GET", "POST", "PATCH", "DELETE", "PUT"])])
    uvicorn.run(web, host=host, port=port, log_level="warning", access_log=False)


def aiohttp(app: App, host: str, port: int) -> None:
    from aiohttp import web

    async def route(request: web.Request) -> web.Response:
        status, payload = app.handle(request.method, request.path_qs, await request.read())
        return web.Response(body=json.dumps(payload).encode(), status=status, content_type="application/json")

    server = web.Application(client_max_size=MAX_BODY)
    server.router.add_route("*", "/{tail:.*}", route)
    web.run_app(server, host=host, port=port, print=None, access_log=None)


STACKS: dict[str, Callable[[App, str, int], None]] = {
    "stdlib-http11": stdlib_http11,
    "stdlib-http10": stdlib_http10,
    "flask": flask,
    "starlette-uvicorn": starlette_uvicorn,
    "aiohttp": aiohttp,
}


def main() -> None:
    ap = argparse.ArgumentParser(description="a zoo server: the reference logic behind one HTTP stack")
    ap.add_argument("stack", choices=sorted(STACKS))
    ap.add_argument("--config", required=True, help="JSON file: {schema}")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    args = ap.parse_args()
    with open(args.config, encoding="utf-8") as fh:
        app = App(json.load(fh))
    with contextlib.suppress(KeyboardInterrupt):
        STACKS[args.stack](app, args.host, args.port)


if __name__ == "__main__":
    main()
