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

from staminad.sandbox.docker.enginespec import EngineSpec, published_host
from staminad.sandbox.outage import EngineWatch, watch_for

PING_TIMEOUT = 3.0  # seconds a /_ping may take before the engine counts as not answering
PING_EVERY = 3.0  # seconds a ping's answer is trusted before the next caller pings again
SUSPECT_FOR = 30.0  # seconds an engine that failed an operation while answering pings gets no new sandbox
TUNNEL_TIMEOUT = 20.0  # seconds for an SSH tunnel's socket to appear


class EngineUnreachable(RuntimeError):
    """An engine could not be connected to (a bad TLS directory, an SSH tunnel that did not come up)."""


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
        self.suspect_until = 0.0  # monotonic time before which no new sandbox is placed here
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

    async def ping(self, fresh: bool = False) -> bool:
        """Whether the engine answers `/_ping` (bounded); asked again only once PING_EVERY has passed, or now when
        `fresh`."""
        if self._ping_lock is None:
            self._ping_lock = anyio.Lock()
        async with self._ping_lock:
            if not fresh and time.monotonic() - self.checked < PING_EVERY:
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

    def watch(self) -> EngineWatch:
        """The process's outage watch of this engine, probed through this endpoint (`staminad.sandbox.outage`)."""

        async def probe() -> str | None:
            return None if await self.ping(fresh=True) else self.detail or "no answer"

        return watch_for(self.url, probe)

    def mark_down(self, detail: str) -> None:
        """An operation on the engine failed as only an engine that stopped answering does: ping it next time."""
        self.checked = 0.0
        self.detail = detail

    def suspect(self, detail: str) -> None:
        """It failed to make a sandbox though it answers pings (say, while shutting down): place none here for
        a while (SUSPECT_FOR)."""
        self.suspect_until = time.monotonic() + SUSPECT_FOR
        self.detail = detail

    @property
    def usable(self) -> bool:
        """Healthy as last seen and not suspect: a candidate for a new sandbox."""
        return self.healthy and time.monotonic() >= self.suspect_until

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await client.close()
        self._close_tunnel()


async def ping(client: aiodocker.Docker) -> str | None:
    """Whether the engine of `client` answers a bounded `/_ping`: None if it does, else why not in one line."""
    try:
        with anyio.fail_after(PING_TIMEOUT):
            async with client._query("_ping", versioned_api=False) as reply:
                return None if reply.status == 200 else f"/_ping answered {reply.status}"
    except (TimeoutError, aiohttp.ClientError, aiodocker.exceptions.DockerError, OSError, RuntimeError) as exc:
        # RuntimeError: a client whose session was closed under it (its sweep ended meanwhile).
        return f"/_ping: {type(exc).__name__}: {exc}".rstrip(": ")


def client_url(client: aiodocker.Docker) -> str:
    """The URL of the engine `client` speaks to (aiodocker names every socket `unix://localhost`)."""
    path = getattr(client.connector, "path", None)
    return f"unix://{path}" if isinstance(path, str) and path else str(client.docker_host)


def client_watch(client: aiodocker.Docker) -> EngineWatch:
    """The process's outage watch of the engine `client` speaks to, probed through `client`."""
    return watch_for(client_url(client), lambda: ping(client))


def local_socket() -> str:
    """The local engine's URL: DOCKER_HOST when set to a socket, else the usual one."""
    host = os.environ.get("DOCKER_HOST", "")
    return host if host.startswith("unix://") else "unix:///var/run/docker.sock"
