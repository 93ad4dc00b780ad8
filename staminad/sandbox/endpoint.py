"""How the daemon reaches one Docker engine: its URL, TLS files or SSH tunnel, its slots, and a bounded ping.

A sweep spread over several engines names each one as `url` (`unix:///path`, `tcp://host:port`,
`ssh://user@host`), optionally a directory of TLS client files (`ca.pem`, `cert.pem`, `key.pem`, as
`docker --tlsverify` uses them) for a TCP engine, and how many scenarios it may hold at once (`slots`).
`Endpoint` turns that into an aiodocker client: a TCP engine with TLS is spoken to over HTTPS with the
engine's CA checked; an SSH engine through `ssh -N -L <local socket>:/var/run/docker.sock` (a tunnel
started with a bound on its start, and ended with the endpoint). `host` is where the engine's published
ports are reached: the engine's own host (for an SSH engine too: the tunnel forwards only the API), or
127.0.0.1 for a local socket.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import ssl
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import aiodocker
import aiohttp
import anyio
import msgspec

PING_TIMEOUT = 3.0  # seconds a /_ping may take before the engine counts as not answering
PING_EVERY = 3.0  # seconds a ping's answer is trusted before the next caller pings again
TUNNEL_TIMEOUT = 20.0  # seconds for an SSH tunnel's socket to appear
TLS_FILES = ("ca.pem", "cert.pem", "key.pem")
SCHEMES = ("unix", "tcp", "ssh")
MAX_SLOTS = 4096


class EngineSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One engine of `[run] engines` (or `staminad start --engine`)."""

    url: str
    slots: int = 4
    tls: str | None = None  # a directory holding ca.pem, cert.pem and key.pem


class EngineUnreachable(RuntimeError):
    """An engine could not be connected to (a bad TLS directory, an SSH tunnel that did not come up)."""


def check_spec(spec: EngineSpec) -> list[str]:
    """What is wrong with one engine entry, a line each (nothing: it is usable as far as can be told offline)."""
    errors = []
    parts = urlsplit(spec.url)
    if parts.scheme not in SCHEMES:
        errors.append(f"url {spec.url!r} must start with unix://, tcp:// or ssh://")
    elif parts.scheme == "unix" and not parts.path:
        errors.append(f"url {spec.url!r} names no socket path")
    elif parts.scheme in ("tcp", "ssh") and not parts.hostname:
        errors.append(f"url {spec.url!r} names no host")
    elif parts.scheme == "tcp":
        try:
            port = parts.port
        except ValueError:
            port = None
        if port is None:
            errors.append(f"url {spec.url!r} must name a port (tcp://HOST:PORT)")
    if not 1 <= spec.slots <= MAX_SLOTS:
        errors.append(f"{spec.url}: slots must be 1..{MAX_SLOTS} (got {spec.slots})")
    if spec.tls is not None:
        if parts.scheme != "tcp":
            errors.append(f"{spec.url}: tls applies to tcp:// engines only")
        missing = [f for f in TLS_FILES if not (Path(spec.tls) / f).is_file()]
        if missing:
            errors.append(f"{spec.url}: tls directory {spec.tls} lacks {', '.join(missing)}")
    return errors


def parse_flag(text: str) -> EngineSpec:
    """`URL[,slots=N][,tls=DIR]` as `staminad start --engine` takes it; ValueError with one line if malformed."""
    url, *options = text.split(",")
    fields: dict[str, str] = {}
    for option in options:
        key, eq, value = option.partition("=")
        if not eq or key not in ("slots", "tls") or key in fields:
            raise ValueError(f"--engine {text!r}: expected URL[,slots=N][,tls=DIR], not {option!r}")
        fields[key] = value
    try:
        slots = int(fields.get("slots", "4"))
    except ValueError:
        raise ValueError(f"--engine {text!r}: slots={fields['slots']!r} is not a number") from None
    spec = EngineSpec(url=url, slots=slots, tls=fields.get("tls"))
    errors = check_spec(spec)
    if errors:
        raise ValueError(f"--engine {text!r}: {errors[0]}")
    return spec


def published_host(spec: EngineSpec) -> str:
    """Where the engine's published ports are reached from the daemon: its host, or loopback for a local one."""
    parts = urlsplit(spec.url)
    return parts.hostname if parts.scheme in ("tcp", "ssh") and parts.hostname else "127.0.0.1"


def _tls_context(directory: str) -> ssl.SSLContext:
    d = Path(directory)
    try:
        context = ssl.create_default_context(purpose=ssl.Purpose.SERVER_AUTH, cafile=str(d / "ca.pem"))
        context.load_cert_chain(certfile=str(d / "cert.pem"), keyfile=str(d / "key.pem"))
    except (OSError, ssl.SSLError) as exc:
        raise EngineUnreachable(f"cannot use the TLS files in {directory}: {exc}") from None
    return context


class Endpoint:
    """A live connection to one engine: the client (made lazily, inside the event loop) and its health."""

    def __init__(self, spec: EngineSpec) -> None:
        self.spec = spec
        self.url = spec.url
        self.host = published_host(spec)
        self.healthy = True  # until a ping says otherwise
        self.checked = 0.0  # monotonic time of the last ping
        self.detail = ""  # why it is not healthy
        self._client: aiodocker.Docker | None = None
        self._tunnel: subprocess.Popen[bytes] | None = None
        self._tunnel_dir: Path | None = None
        self._socket: Path | None = None
        self._ping_lock: anyio.Lock | None = None

    def client(self) -> aiodocker.Docker:
        """The endpoint's own client (pings, image copies), made on first use inside the event loop."""
        if self._client is None:
            self._client = self.connect()
        return self._client

    def connect(self) -> aiodocker.Docker:
        """A new client of the engine (a sandbox factory owns and closes its own); the SSH tunnel is shared."""
        parts = urlsplit(self.url)
        if parts.scheme == "ssh":
            if self._tunnel is None or self._tunnel.poll() is not None:
                self._close_tunnel()
                self._socket = self._open_tunnel()
            return aiodocker.Docker(url=f"unix://{self._socket}")
        if parts.scheme == "tcp" and self.spec.tls:
            return aiodocker.Docker(url=f"https://{parts.netloc}", ssl_context=_tls_context(self.spec.tls))
        if parts.scheme == "tcp":
            return aiodocker.Docker(url=f"http://{parts.netloc}")
        return aiodocker.Docker(url=self.url)

    def _open_tunnel(self) -> Path:
        """`ssh -N -L sock:/var/run/docker.sock user@host`, waited for (bounded) until its socket exists."""
        parts = urlsplit(self.url)
        self._tunnel_dir = Path(tempfile.mkdtemp(prefix="staminad-ssh-"))
        sock = self._tunnel_dir / "docker.sock"
        target = f"{parts.username}@{parts.hostname}" if parts.username else str(parts.hostname)
        argv = ["ssh", "-N", "-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes"]
        if parts.port:
            argv += ["-p", str(parts.port)]
        argv += ["-L", f"{sock}:/var/run/docker.sock", target]
        self._tunnel = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + TUNNEL_TIMEOUT
        while not sock.exists():
            if self._tunnel.poll() is not None or time.monotonic() > deadline:
                self._close_tunnel()
                raise EngineUnreachable(f"the SSH tunnel to {self.url} did not come up within {TUNNEL_TIMEOUT:.0f} s")
            time.sleep(0.05)  # ssh creates the socket once it is connected; nothing to wait on instead
        return sock

    def _close_tunnel(self) -> None:
        tunnel, self._tunnel = self._tunnel, None
        if tunnel is not None and tunnel.poll() is None:
            tunnel.terminate()
            try:
                tunnel.wait(timeout=5)
            except subprocess.TimeoutExpired:
                tunnel.kill()
                tunnel.wait(timeout=5)
        if self._tunnel_dir is not None:
            shutil.rmtree(self._tunnel_dir, ignore_errors=True)
            self._tunnel_dir = None

    async def ping(self) -> bool:
        """Whether the engine answers `/_ping` (bounded); asked again only once PING_EVERY has passed."""
        if self._ping_lock is None:
            self._ping_lock = anyio.Lock()
        async with self._ping_lock:
            if time.monotonic() - self.checked < PING_EVERY:
                return self.healthy
            try:
                with anyio.fail_after(PING_TIMEOUT):
                    async with self.client()._query("_ping", versioned_api=False) as reply:
                        ok = reply.status == 200
                self.healthy, self.detail = ok, "" if ok else f"/_ping answered {reply.status}"
            except (TimeoutError, aiohttp.ClientError, aiodocker.exceptions.DockerError, OSError) as exc:
                self.healthy, self.detail = False, f"/_ping: {type(exc).__name__}: {exc}".rstrip(": ")
            except EngineUnreachable as exc:
                self.healthy, self.detail = False, str(exc)
            self.checked = time.monotonic()
            return self.healthy

    def mark_down(self, detail: str) -> None:
        """An operation on the engine failed as only an engine that stopped answering does: ping it next time."""
        self.checked = 0.0
        self.detail = detail

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await client.close()
        self._close_tunnel()


def local_socket() -> str:
    """The local engine's URL: DOCKER_HOST when set to a socket, else the usual one."""
    host = os.environ.get("DOCKER_HOST", "")
    return host if host.startswith("unix://") else "unix:///var/run/docker.sock"
