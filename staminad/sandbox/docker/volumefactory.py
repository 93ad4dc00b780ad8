"""Volume sandboxes on one engine: the factory the engine asks for each scenario's `volumesandbox.VolumeSandbox`.

Its engine may be remote: the server ports its containers publish are reached at `server_host`, and
the LLM gateway at the address configured for that engine (else the host side of its bridge). Closing
it removes the sweep's containers, then their volumes; snapshots stay in the state directory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import aiodocker
import anyio

from staminad.sandbox.base import Grant, SandboxFactory
from staminad.sandbox.docker.container import ContainerFactory, reap, reap_volumes
from staminad.sandbox.docker.volumesandbox import VolumeSandbox
from staminad.sandbox.settings import ContainerSettings


class VolumeFactory(ContainerFactory):
    """Volume sandboxes on one engine: `connect` reaches it, its published ports are reached at `server_host`."""

    def __init__(
        self,
        run: ContainerSettings,
        connect: Callable[[], aiodocker.Docker] = aiodocker.Docker,
        publish_ip: str = "127.0.0.1",
        server_host: str = "127.0.0.1",
        gateway: str | None = None,
    ) -> None:
        super().__init__(run, connect)
        self.publish_ip, self.server_host = publish_ip, server_host
        self.gateway = gateway  # where its containers reach the LLM gateway; None: the engine's own bridge

    async def llm_hosts(self) -> list[str]:
        """The gateway's address for this engine's containers: the one configured, else its bridge's host side."""
        if self.gateway is None:
            return await super().llm_hosts()
        self.bridge_ip = self.gateway  # where granted sandboxes are sent, and the one address their seal lets out
        return [self.gateway]

    def __call__(self, root: Path, label: str, grant: Grant = Grant()) -> VolumeSandbox:  # noqa: B008 - frozen
        sandbox = VolumeSandbox(
            self.client(),
            root,
            root.parent.name,
            label,
            self.run,
            self.creations,
            grant,
            self.llm(),
            self.publish_ip,
            self.server_host,
        )
        sandbox.llm_host = self.bridge_ip or "127.0.0.1"
        return sandbox

    async def aclose(self, sandboxes: Path) -> None:
        """Remove the sweep's containers, then its volumes (its snapshots stay in the state dir)."""
        client, self._client = self._client or self.connect(), None
        try:
            where = Path(await anyio.Path(sandboxes).resolve())
            await reap(client, where)
            await reap_volumes(client, where)
        finally:
            await client.close()


def volume_factory(
    run: ContainerSettings,
    connect: Callable[[], aiodocker.Docker] = aiodocker.Docker,
    publish_ip: str = "127.0.0.1",
    server_host: str = "127.0.0.1",
    gateway: str | None = None,
) -> SandboxFactory:
    return VolumeFactory(run, connect, publish_ip, server_host, gateway)
