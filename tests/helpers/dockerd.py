"""A second Docker engine on this machine, for the multi-engine tests: started, stopped and removed by the tests.

A separate `dockerd` (root) with its own data root, exec root, pid file and managed containerd, an empty
config file (so /etc/docker/daemon.json is not read), no iptables and no default bridge, answering only on
a TCP socket on 127.0.0.1. Its user networks (the sandbox's sealed network) are bridges of their own on
subnets the engine picks clear of the host's routes; a published port is served by the engine's userland
proxy on 127.0.0.1, which needs no iptables. The sandbox seals each container inside its own network
namespace, so that works the same on this engine.

Everything it made goes at `remove`, also after a failed start or a test that failed: its networks (the
bridges) through the API while it answers, then its processes (dockerd, its containerd and the shims, found
by the private directory on their command lines, never by name), the bridges it left, and its directories.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.helpers import free_port
from tests.helpers.tiers import needs

START_TIMEOUT = 60.0  # seconds for /_ping to answer after dockerd starts (about 2 s here when idle)
STOP_TIMEOUT = 30.0  # seconds for a graceful stop (it stops its containers first) before SIGKILL
PING_TIMEOUT = 2.0


class EngineStartError(RuntimeError):
    """The second engine did not answer its /_ping in time; its log's last lines say why."""


class SecondEngine:
    """One private dockerd on tcp://127.0.0.1:<port>; `start` and `stop` may be called again (same data root)."""

    def __init__(self, base: Path | None = None, tls: Path | None = None) -> None:
        """`tls`: a directory from `make_tls`; the engine then answers HTTPS only, to clients of that CA."""
        self.root = Path(tempfile.mkdtemp(prefix="sb-dockerd-", dir=base))
        self.tls = tls
        self.port = free_port()
        self.url = f"tcp://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.started_in = 0.0  # seconds the last start took, to /_ping answering
        self._bridges: set[str] = set()  # host interfaces of its networks, as last seen
        (self.root / "daemon.json").write_text("{}")

    def argv(self) -> list[str]:
        r = self.root
        return [
            "dockerd",
            f"--data-root={r / 'data'}",
            f"--exec-root={r / 'exec'}",
            f"--pidfile={r / 'dockerd.pid'}",
            f"--host={self.url}",
            f"--config-file={r / 'daemon.json'}",
            "--iptables=false",
            "--ip-masq=false",
            "--bridge=none",
            "--storage-driver=overlay2",
            *self._tls_args(),
        ]

    def _tls_args(self) -> list[str]:
        if self.tls is None:
            return []
        t = self.tls
        return [
            "--tlsverify",
            f"--tlscacert={t / 'ca.pem'}",
            f"--tlscert={t / 'server.pem'}",
            f"--tlskey={t / 'server-key.pem'}",
        ]

    def _open(self, path: str, timeout: float, method: str = "GET") -> Any:
        """An HTTP(S) request to the engine (with the client certificate when it speaks TLS)."""
        scheme = "https" if self.tls else "http"
        request = urllib.request.Request(f"{scheme}://127.0.0.1:{self.port}{path}", method=method)
        context = None
        if self.tls is not None:
            context = ssl.create_default_context(cafile=str(self.tls / "ca.pem"))
            context.load_cert_chain(str(self.tls / "cert.pem"), str(self.tls / "key.pem"))
        return urllib.request.urlopen(request, timeout=timeout, context=context)

    def ping(self, timeout: float = PING_TIMEOUT) -> bool:
        try:
            with self._open("/_ping", timeout) as reply:
                return bool(reply.status == 200)
        except OSError:
            return False

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Start dockerd and return once /_ping answers (bounded); on failure everything started is stopped."""
        needs("docker", "starts a second Docker engine")
        log = open(self.root / "dockerd.log", "ab")  # noqa: SIM115 - handed to the process, closed below
        t0 = time.monotonic()
        try:
            self.process = subprocess.Popen(
                self.argv(), stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
            )
        finally:
            log.close()
        deadline = t0 + timeout
        while not self.ping(0.5):
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = (self.root / "dockerd.log").read_text(errors="replace").strip().splitlines()[-3:]
                self.stop()
                raise EngineStartError(f"the second dockerd did not answer within {timeout:.0f} s: {tail}")
            time.sleep(0.1)  # polling another process's socket until it answers; nothing to wait on instead
        self.started_in = time.monotonic() - t0

    def freeze(self) -> None:
        """Stop the engine answering without stopping it (SIGSTOP): its containers run on, unreachable."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def stop(self) -> None:
        """Stop dockerd gracefully (it stops its containers), SIGKILL past STOP_TIMEOUT, then what it left."""
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)  # a frozen one must run to stop
            with contextlib.suppress(OSError, ValueError):
                self._bridges.update(f"br-{i[:12]}" for i in self._network_ids())  # kept by dockerd when it stops
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=STOP_TIMEOUT)
        self._kill_leftovers()

    def _kill_leftovers(self) -> None:
        """SIGKILL every process whose command line names this engine's directory (containerd, shims)."""
        mark = str(self.root).encode()
        deaths = []  # pidfds: readable once the process has died (a SIGKILLed one still runs until scheduled)
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                fd = os.pidfd_open(int(entry.name))
            except OSError:  # gone already
                continue
            try:
                if mark in (entry / "cmdline").read_bytes():  # read after the pidfd: the same process
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                    deaths.append(fd)
                    continue
            except OSError:
                pass
            os.close(fd)
        deadline = time.monotonic() + 10
        for fd in deaths:
            select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            os.close(fd)

    def _network_ids(self) -> list[str]:
        """Ids of this engine's bridge networks (each a `br-<id>` interface on the host)."""
        with self._open("/networks", PING_TIMEOUT) as reply:
            return [n["Id"] for n in json.load(reply) if n.get("Driver") == "bridge"]

    def remove(self) -> None:
        """Remove the engine's networks, stop it, delete its bridges and directories; nothing of it is left."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGCONT)
            with contextlib.suppress(OSError, ValueError):
                for net in self._network_ids():
                    self._bridges.add(f"br-{net[:12]}")
                    with contextlib.suppress(OSError):
                        self._open(f"/networks/{net}", 10, "DELETE").close()
        self.stop()
        for bridge in sorted(self._bridges):
            if Path(f"/sys/class/net/{bridge}").exists():
                subprocess.run(["ip", "link", "delete", bridge], capture_output=True, timeout=10)
        for mount in _mounts_below(self.root):
            subprocess.run(["umount", "-l", mount], capture_output=True, timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)


def make_tls(directory: Path) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate (openssl), as `docker --tlsverify` uses
    them: ca.pem, server.pem, server-key.pem, and the client's cert.pem and key.pem."""
    d = directory
    d.mkdir(parents=True, exist_ok=True)

    def run(*argv: str) -> None:
        subprocess.run(["openssl", *argv], cwd=d, check=True, capture_output=True, timeout=60)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca-key.pem",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=staminabench test CA",
    )
    for name, usage, extra in (("server", "serverAuth", "subjectAltName=IP:127.0.0.1"), ("client", "clientAuth", "")):
        key, csr, cert = (
            ("server-key.pem", "server.csr", "server.pem")
            if name == "server"
            else ("key.pem", "client.csr", "cert.pem")
        )
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={name}")
        (d / f"{name}.ext").write_text(f"extendedKeyUsage={usage}\n" + (f"{extra}\n" if extra else ""))
        run(
            "x509",
            "-req",
            "-in",
            csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca-key.pem",
            "-CAcreateserial",
            "-out",
            cert,
            "-days",
            "2",
            "-extfile",
            f"{name}.ext",
        )
    return d


def _mounts_below(root: Path) -> list[str]:
    """Mount points under `root` (overlay layers, the exec root's netns files), deepest first."""
    prefix = str(root) + "/"
    with open("/proc/self/mounts") as f:
        points = [line.split()[1] for line in f if line.split()[1].startswith(prefix)]
    return sorted(points, key=len, reverse=True)
