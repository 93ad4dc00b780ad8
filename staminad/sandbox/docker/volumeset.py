"""The four named volumes a volume sandbox lives on, and how a prepare knows a set of them is ready.

`volumesandbox.VolumeSandbox` keeps a scenario's files in four labelled volumes on its engine (see `PARTS`).
Preparing them is cut off wherever the daemon is killed, so readiness is never inferred from a volume
existing: each volume gets a random token as a label when made (labels never change, so a volume
removed and made again under its name is told apart), and the prepare that finishes populating a set
writes, last, a stamp naming the set's tokens into the control volume (root's alone). A prepare that
finds no stamp, or another set's, populates again; every step of that is safe to repeat.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import aiodocker
import anyio

from staminad.sandbox.base import SandboxError
from staminad.sandbox.docker.container import CONTROL, LABEL_SANDBOXES, ROOT, agent_ids
from staminad.sandbox.docker.image import PRIVATE_DIR

PARTS = {  # volume part -> (its writable mount, its read-only mount for the agent or "")
    "workspace": ("/workspace", ""),
    "control": (CONTROL, ""),
    "layer": (f"{PRIVATE_DIR}/layer", "/harness"),
    "prompts": (f"{PRIVATE_DIR}/prompts", "/stamina/prompts"),
}
LABEL_VOLUME = "staminabench.volume"  # the token a volume gets when made
STAMP = "prepared.json"  # in the control volume: the set whose population finished, and whether it restored

UNTOKENED = "made "  # how a token of a volume made before volumes got tokens starts (its creation time follows)
Engine = Callable[[str, Callable[[], Any]], Awaitable[Any]]  # one engine call, its failures as SandboxError


def stamp(tokens: dict[str, str], restored: bool) -> str:
    return json.dumps({"volumes": tokens, "restored": restored}, sort_keys=True)


def stamped(text: str | None) -> dict[str, Any]:
    """A stamp's fields; {} for none or one that is not a stamp."""
    with contextlib.suppress(ValueError):
        found = json.loads(text or "")
        return found if isinstance(found, dict) else {}
    return {}


class VolumeSet:
    """One sandbox's volumes on one engine: `<container>-<part>`, labelled `labels` (see the module docstring)."""

    def __init__(self, docker: aiodocker.Docker, container: str, labels: dict[str, str], engine: Engine) -> None:
        self.docker, self.container, self.labels, self._engine = docker, container, labels, engine

    def name(self, part: str) -> str:
        return f"{self.container}-{part}"

    def mounts(self) -> list[dict[str, Any]]:
        mounts = []
        for part, (rw, ro) in PARTS.items():
            mounts.append({"Type": "volume", "Source": self.name(part), "Target": rw, "ReadOnly": False})
            if ro:
                mounts.append({"Type": "volume", "Source": self.name(part), "Target": ro, "ReadOnly": True})
        return mounts

    async def ensure(self) -> dict[str, str]:
        """Each part's volume, made when missing: part -> its token."""
        vols: Any = self.docker.volumes  # aiodocker's volume calls are untyped

        async def listed() -> dict[str, Any]:
            label = f"{LABEL_SANDBOXES}={self.labels[LABEL_SANDBOXES]}"
            found = await self._engine("list volumes", lambda: vols.list(filters={"label": [label]}))
            return {v["Name"]: v for v in found.get("Volumes") or []}

        have = await listed()
        missing = [part for part in PARTS if self.name(part) not in have]
        for part in missing:
            config = {"Name": self.name(part), "Labels": {**self.labels, LABEL_VOLUME: secrets.token_hex(8)}}
            await self._engine("create volume", lambda c=config: vols.create(c))  # type: ignore[misc]
        if missing:
            have = await listed()  # the engine answers a create of a name it holds with that volume, as it is
        tokens = {}
        for part in PARTS:
            found = have.get(self.name(part))
            if found is None:
                raise SandboxError(f"volume {self.name(part)} exists without this sweep's label", "engine_error")
            # A volume made before tokens were given: its creation time tells it from one made again later.
            tokens[part] = (found.get("Labels") or {}).get(LABEL_VOLUME) or f"{UNTOKENED}{found.get('CreatedAt')}"
        return tokens

    async def hand_workspace(self, image: str) -> None:
        """Give the workspace volume's root to the agent: a helper with CAP_CHOWN alone, nothing else."""
        uid, gid = agent_ids()
        config: dict[str, Any] = {
            "Image": image,
            "User": ROOT,
            "Cmd": ["chown", f"{uid}:{gid}", "/workspace"],
            "Labels": self.labels,
            "NetworkDisabled": True,
            "HostConfig": {
                "Mounts": [{"Type": "volume", "Source": self.name("workspace"), "Target": "/workspace"}],
                "CapDrop": ["ALL"],
                "CapAdd": ["CHOWN"],
                "ReadonlyRootfs": True,
                "SecurityOpt": ["no-new-privileges"],
                "NetworkMode": "none",
                "Memory": 64 << 20,
            },
        }
        name = f"{self.container}-chown"
        with contextlib.suppress(SandboxError):  # one a daemon killed meanwhile left behind
            await self._engine("remove helper", lambda: self._remove(name))
        helper = await self._engine("create helper", lambda: self.docker.containers.create(config=config, name=name))
        try:
            await self._engine("start helper", helper.start)
            code = (await self._engine("wait for helper", helper.wait)).get("StatusCode")
            if code != 0:
                raise SandboxError(f"cannot hand the workspace of {self.container} to the agent (exit {code})")
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(SandboxError):
                await self._engine("remove helper", lambda: helper.delete(force=True))

    async def _remove(self, name: str) -> None:
        with contextlib.suppress(aiodocker.exceptions.DockerError):
            await (await self.docker.containers.get(name)).delete(force=True)


__all__ = ["LABEL_VOLUME", "PARTS", "STAMP", "UNTOKENED", "VolumeSet", "stamp", "stamped"]
