"""Serving the viewer with uvicorn on a socket we bind ourselves: loopback, a Unix socket, or a token.

Binding first lets us refuse a busy port with one line, print the real address (also for port 0), make a
Unix socket 0600 before anyone can connect, and decide about the token before the first request: a host
that is not loopback is only served with a fresh token, printed once, never open by accident.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import os
import secrets
import socket
from collections.abc import Callable
from pathlib import Path

import uvicorn

from protocol.errors import ExpectedError
from protocol.paths import clear_stale_socket
from staminad.viewer.app import create_app

LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


class ViewError(Exception):
    """The viewer cannot start as asked (busy port, bad host, socket path in use)."""


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind_tcp(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family, backlog=64)
    except OSError as exc:
        # The host is wrong, not the port, for a name that does not resolve (getaddrinfo's errors are negative;
        # create_server re-raises them as OSError) or an address that is not this machine's.
        wrong_host = exc.errno is not None and (exc.errno < 0 or exc.errno == errno.EADDRNOTAVAIL)
        again = "--host" if wrong_host else "--port"
        raise ViewError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another {again}") from None


def bind_unix(path: Path) -> socket.socket:
    try:
        clear_stale_socket(path, "pick another --socket")
    except ExpectedError as exc:
        raise ViewError(str(exc)) from None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # the socket is created 0600: only this user can connect
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise ViewError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old)
    sock.listen(64)
    return sock


def serve(state_dir: Path, host: str, port: int, unix: Path | None, say: Callable[[str], None]) -> None:
    """Serve until interrupted (the first SIGINT/SIGTERM drains, as uvicorn does)."""
    token: str | None = None
    allowed: list[str] | None = None
    if unix is not None:
        sock = bind_unix(unix)
        where = f"unix socket {unix} (mode 0600)"
    else:
        sock = bind_tcp(host, port)
        bound_port = sock.getsockname()[1]
        shown = f"[{host.strip('[]')}]" if ":" in host else host
        if is_loopback(host):
            if ":" not in host:  # Host-header check against DNS rebinding (IPv4 names only: see TrustedHost)
                allowed = ["127.0.0.1", "localhost", host]
            where = f"http://{shown}:{bound_port}/"
        else:
            token = secrets.token_urlsafe(24)
            where = f"http://{shown}:{bound_port}/?token={token}  (the token is shown only now)"
    say(f"staminad view: {state_dir / 'staminad.db'} at {where}; Ctrl-C stops")
    config = uvicorn.Config(
        create_app(state_dir, token=token, allowed_hosts=allowed),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_keep_alive=5,
        timeout_graceful_shutdown=5,
    )
    try:
        asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
    finally:
        sock.close()
        if unix is not None:
            unix.unlink(missing_ok=True)
