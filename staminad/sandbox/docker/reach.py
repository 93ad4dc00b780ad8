"""Where the daemon reaches a Docker sandbox's server: at the container's own address on the project's network.

The server is published on a port of the engine's host too, but a published port goes through Docker's
userland proxy, another process that copies every byte: the suite ran 30-50% slower through it than
against a local server. The firewall (`container.firewall`) admits the server port from any address, so
the host reaches the container directly whenever it is on the project's network, that is, when the
network's bridge gateway is one of this host's own addresses (an engine on this host reached by its local
socket). An engine in a VM or on another host keeps the published port.
"""

from __future__ import annotations

import socket

import aiodocker
import aiohttp
import anyio

from staminad.sandbox.docker.container import NETWORK, OP_TIMEOUT


def local_address(address: str) -> bool:
    """Whether `address` is one of this host's own (a socket can be bound to it)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind((address, 0))
    except (OSError, ValueError):
        return False
    return True


async def direct_address(docker: aiodocker.Docker, name: str) -> str:
    """The address of container `name` on the project's network if this host reaches it directly, else ""."""
    if not str(getattr(docker, "docker_host", "")).startswith("unix://"):
        return ""
    try:
        with anyio.fail_after(OP_TIMEOUT):
            info = await (await docker.containers.get(name)).show()
    except (aiodocker.exceptions.DockerError, TimeoutError, aiohttp.ClientError, OSError):
        return ""  # the published port then, where a gone container is judged as ever
    net = ((info.get("NetworkSettings") or {}).get("Networks") or {}).get(NETWORK) or {}
    address, gateway = str(net.get("IPAddress") or ""), str(net.get("Gateway") or "")
    return address if address and gateway and local_address(gateway) else ""
