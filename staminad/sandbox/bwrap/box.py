"""The `bwrap` runtime's box (`seam.Box`): bubblewrap enclosures, and the factory that makes its sandboxes.

Each harness run and each server start runs in an enclosure of its own, made by bubblewrap (`bwrap`):

- a user namespace in which the agent is uid/gid 1000 with no capabilities (`--cap-drop ALL`), and may make no
  further user namespaces (`--disable-userns`); its own pid, IPC and UTS namespaces, so it sees only its own
  processes and can signal nothing outside, and ending the enclosure's init ends everything it started
  (`enclosure.end`); a new session (no terminal to inject into);
- a file system of its own: the system read-only (/usr, the merged /bin, /lib, ..., a few files of /etc that
  programs need, never /etc/shadow), a private /proc, a minimal /dev, a bounded /tmp of its own; the workspace
  read-write at /workspace; the agent layer (`Grant.layer`, staged below the sandbox's root) read-only at
  /harness; the prompts read-only at /stamina/prompts. Nothing else of the host: no other sandbox's workspace, no
  control files (job commands, markers, logs, records), no daemon state;
- the host's network, so the server is probed on its allocated loopback port and the LLM gateway is reached on
  127.0.0.1 as with `local`: unlike `docker`, this runtime does not seal the network (see the README).

The wrapper that writes each job's marker runs on the host, outside the enclosure, where the agent can neither
forge the marker nor signal the wrapper.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio

from staminad.sandbox.base import Grant, HostView, Loss, Sandbox, SandboxPaths
from staminad.sandbox.boxed import BoxedSandbox
from staminad.sandbox.bwrap import enclosure
from staminad.sandbox.hostfiles import stage_layer
from staminad.sandbox.ports import PortAllocator

AGENT_ID = "1000"  # the agent's uid and gid inside (mapped to the daemon's own user outside)
TMP_BYTES = 256 << 20  # the enclosure's own /tmp
PATH = "/usr/local/bin:/usr/bin:/bin"
MERGED = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")  # /usr links or directories of the system
ETC = (  # what programs read of /etc; the rest (shadow, the daemon's own configuration) stays out
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "gai.conf",
    "group",
    "host.conf",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "passwd",
    "protocols",
    "python3",
    "resolv.conf",
    "services",
    "ssl",
)
NAMESPACES = [
    "--unshare-user",
    "--uid",
    AGENT_ID,
    "--gid",
    AGENT_ID,
    "--disable-userns",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--hostname",
    "sandbox",
    "--unshare-cgroup-try",
    "--cap-drop",
    "ALL",
    "--new-session",
    "--die-with-parent",  # the enclosure's parent is a shell of `enclose`, never a thread of the daemon
]


def system_view() -> list[str]:
    """bwrap arguments for the read-only system: /usr, the merged top-level links, /etc's allow-list, and a
    private /proc, /dev and /tmp."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in MERGED:
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", str(top.readlink()), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    for name in ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return [*args, "--proc", "/proc", "--dev", "/dev", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]


class BwrapBox:
    """One scenario's enclosures (see the module docstring)."""

    def __init__(self, root: Path, view: HostView, grant: Grant) -> None:
        self.root = root
        self.view = view
        self.layer_dir = root / "layer"
        self.grant = grant
        self.paths = SandboxPaths(workspace="/workspace", control="/stamina", harness="/harness")

    def describe(self) -> dict[str, Any]:
        return {"runtime": "bwrap", "root": str(self.root)}

    async def open(self) -> None:
        await anyio.to_thread.run_sync(stage_layer, self.layer_dir, self.grant.layer)

    def enclose(self, argv: list[str], env: dict[str, str], record: Path) -> list[str]:
        """`sh` opens the record as bwrap's info descriptor and stays bwrap's parent (`--die-with-parent`: killing
        the host-side group ends the enclosure too)."""
        mounts = [
            *system_view(),
            *("--bind", str(self.view.workspace), self.paths.workspace),
            *("--ro-bind", str(self.layer_dir), self.paths.harness),
            *("--ro-bind", str(self.view.control / "prompts"), f"{self.paths.control}/prompts"),
        ]
        variables = {"PATH": PATH, "LANG": "C.UTF-8", **env}
        setenv = [a for k, v in sorted(variables.items()) for a in ("--setenv", k, v)]
        bwrap = [shutil.which("bwrap") or "bwrap", "--info-fd", "3", *NAMESPACES, *mounts]
        bwrap += ["--chdir", self.paths.workspace, "--clearenv", *setenv, "--", *argv]
        return ["sh", "-c", '"$@" 3>"$0"; exit $?', str(record), *bwrap]

    def end(self, record: Path) -> bool:
        return enclosure.end(record)

    def holds(self, record: Path, pid: int) -> bool:
        return enclosure.holds(record, pid)

    async def health(self) -> Loss | None:
        """Enclosures need nothing that runs between calls: only the staged layer can go."""
        if not self.layer_dir.is_dir():
            return Loss(kind="sandbox_lost", detail=f"the agent layer {self.layer_dir} is gone")
        return None


class BwrapFactory:
    """Sandboxes in bubblewrap enclosures on this machine; the gateway is reached on 127.0.0.1."""

    def __init__(self, ports: PortAllocator) -> None:
        self.ports = ports

    def __call__(self, root: Path, label: str, grant: Grant = Grant()) -> Sandbox:  # noqa: B008 - frozen, shared
        view = HostView(workspace=root / "workspace", control=root / "control")
        return BoxedSandbox(view, BwrapBox(root, view, grant), self.ports)

    async def llm_hosts(self) -> list[str]:
        return []

    def llm_serving(self, port: int) -> None:
        pass

    async def aclose(self, sandboxes: Path) -> None:
        pass
