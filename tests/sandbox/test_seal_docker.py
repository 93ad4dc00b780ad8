"""The sealed Docker sandbox, tried as a hostile agent would: what it can read, reach, write and signal."""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiodocker
import httpx
import pytest

import staminad
from staminad.agents.base import adapter_for
from staminad.bench.pack import build_pack, prompt_path
from staminad.bench.scenario import ScenarioParams
from staminad.engine.config import RunSettings
from staminad.engine.markers import MarkerWatcher
from staminad.sandbox.base import SERVER_PORT_IN_CONTAINER, Grant, marker_path
from staminad.sandbox.docker.bindsandbox import FSIZE, LABEL_SANDBOXES, TMP_MB, DockerFactory, DockerSandbox
from staminad.sandbox.docker.sealed import HARNESS_LOG_LIMIT, SERVER_LOG_LIMIT
from staminad.sandbox.ports import PortAllocator

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

PACKAGE = Path(staminad.__file__).parent
GRADER = ("reference", "suite", "bench")  # packages no real harness's sandbox may carry


@pytest.fixture
async def sandboxes(tmp_path: Path, sandbox_image: str) -> AsyncIterator[DockerFactory]:
    """A Docker factory for this test's sweep directory; every container it made is reaped afterwards."""
    factory = DockerFactory(RunSettings(image=sandbox_image), PortAllocator())
    try:
        yield factory
    finally:
        await factory.aclose(tmp_path / "sandboxes" / "seal")


async def as_agent(box: DockerSandbox, watcher: MarkerWatcher, job: str, script: str) -> tuple[dict[str, Any], str]:
    """Run a Python script as the agent's harness would be run (wrapper, agent uid); (marker, its output)."""
    (box.host_workspace / f"{job}.py").write_text(textwrap.dedent(script))
    await box.launch(job, ["python3", f"/workspace/{job}.py"], {})
    marker = await watcher.wait(marker_path(box.host_control, job), 60)
    assert marker is not None, "the probe never finished"
    return dict(marker), (box.host_control / "jobs" / job / "log").read_text()


FIND = """
import hashlib, json, os, sys
wanted = json.loads(open("/workspace/wanted.json").read())
found = []
for top, dirs, files in os.walk("/", onerror=lambda e: None):
    if top in ("/proc", "/sys", "/dev"):
        dirs[:] = []
        continue
    for name in files:
        path = os.path.join(top, name)
        try:
            if not os.path.isfile(path) or os.path.islink(path) or os.path.getsize(path) > 4 << 20:
                continue
            digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
        except OSError:
            continue
        if digest in wanted["hashes"] or any(path.endswith("/" + n) for n in wanted["names"]):
            found.append(path)
print(json.dumps(found))
"""


def grader_files(pack_dir: Path) -> tuple[set[str], set[str]]:
    """Hashes and package-relative names of every grader file, plus the pack files an agent must never see."""
    hashes, names = set(), set()
    for package in GRADER:
        for path in (PACKAGE / package).rglob("*.py"):
            if path.stat().st_size:
                hashes.add(hashlib.sha256(path.read_bytes()).hexdigest())
            if path.name != "__init__.py":  # `suite/__init__.py` names other libraries' files too (SQLAlchemy's)
                names.add(f"{package}/{path.relative_to(PACKAGE / package)}")
    files = build_pack([0], ScenarioParams(turns=3))
    pack_dir.mkdir(parents=True)
    for rel, data in files.items():
        # The agent sees the README, the spec and its current prompt; the scenario, manifest and later prompts never.
        if rel.endswith(("scenario.json", "manifest.json")) or rel in (prompt_path(0, 2), prompt_path(0, 3)):
            (pack_dir / rel.replace("/", "_")).write_bytes(data)
            hashes.add(hashlib.sha256(data).hexdigest())
    return hashes, names


@pytest.mark.parametrize("agent", ["manual", "mini-swe-agent"])
async def test_a_real_harness_sandbox_holds_nothing_of_the_grader(
    tmp_path: Path, sandboxes: DockerFactory, watcher: MarkerWatcher, agent: str
) -> None:
    """Searched by content hash and by name, the whole file system holds no grader package file and no pack file."""
    hashes, names = grader_files(tmp_path / "pack")
    adapter = adapter_for(agent)
    box = sandboxes(tmp_path / "sandboxes" / "seal" / "c1-s0", agent, Grant(layer=adapter.layer()))
    await box.prepare()
    (box.host_workspace / "wanted.json").write_text(json.dumps({"hashes": sorted(hashes), "names": sorted(names)}))
    marker, out = await as_agent(box, watcher, "find", FIND)
    assert marker["exit"] == 0, out
    assert json.loads(out.strip().splitlines()[-1]) == []


async def test_the_search_finds_the_reference_code_where_the_reference_agent_runs(
    tmp_path: Path, sandboxes: DockerFactory, watcher: MarkerWatcher
) -> None:
    """The same search in the reference agent's sandbox finds its code: the search does look everywhere."""
    hashes, names = grader_files(tmp_path / "pack")
    box = sandboxes(
        tmp_path / "sandboxes" / "seal" / "c1-s0", "reference", Grant(layer=adapter_for("reference").layer())
    )
    await box.prepare()
    (box.host_workspace / "wanted.json").write_text(json.dumps({"hashes": sorted(hashes), "names": sorted(names)}))
    _, out = await as_agent(box, watcher, "find", FIND)
    found = json.loads(out.strip().splitlines()[-1])
    assert "/harness/reference/agent.py" in found and not any("/suite/" in p or "/bench/" in p for p in found)


CONNECT = """
import json, socket, sys
results = {}
for host, port in json.loads(sys.argv[1] if len(sys.argv) > 1 else open("/workspace/targets.json").read()):
    try:
        socket.create_connection((host, port), timeout=2).close()
        results[f"{host}:{port}"] = "connected"
    except OSError as exc:
        results[f"{host}:{port}"] = type(exc).__name__
print(json.dumps(results))
"""


def host_addresses() -> list[str]:
    """The host's IPv4 addresses (every interface), as `ip` lists them."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout
    return [line.split()[3].split("/")[0] for line in out.splitlines() if " lo " not in line]


async def reach(box: DockerSandbox, watcher: MarkerWatcher, job: str, targets: list[tuple[str, int]]) -> dict[str, str]:
    (box.host_workspace / "targets.json").write_text(json.dumps(targets))
    marker, out = await as_agent(box, watcher, job, CONNECT)
    assert marker["exit"] == 0, out
    return dict(json.loads(out.strip().splitlines()[-1]))


def iptables() -> str:
    """The host's iptables rules (every table), counters and comments left out."""
    out = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
    return "\n".join(line for line in out.splitlines() if not line.startswith(("#", ":")))


async def test_sandboxes_reach_neither_each_other_nor_host_services(
    tmp_path: Path, sandboxes: DockerFactory, watcher: MarkerWatcher
) -> None:
    """Sandboxes reach neither each other, host listeners nor the engine's DNS; the host still tests them."""
    await sandboxes.llm_hosts()
    a = sandboxes(tmp_path / "sandboxes" / "seal" / "c1-s0", "a", Grant(layer=adapter_for("manual").layer()))
    b = sandboxes(tmp_path / "sandboxes" / "seal" / "c1-s1", "b", Grant(layer=adapter_for("manual").layer()))
    await a.prepare()
    await b.prepare()
    (b.host_workspace / "run_server.sh").write_text('exec python3 -m http.server --bind 0.0.0.0 "$1"\n')
    handle = await b.start_server(20)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", 0))
    listener.listen()
    try:
        async with httpx.AsyncClient() as client:
            assert (await client.get(handle.url, timeout=10)).status_code == 200  # the suite's way in still works
        async with aiodocker.Docker() as docker:
            info = await (await docker.containers.get(b.name)).show()
        b_ip = next(iter(info["NetworkSettings"]["Networks"].values()))["IPAddress"]
        ours = [f"{b_ip}/", f"{b_ip}:", f"--dport {a.port} ", f"--dport {b.port} "]
        host_port = listener.getsockname()[1]
        targets = [
            ("127.0.0.11", 53),  # the engine's DNS, which forwards to the host's resolvers (TCP as well as UDP)
            (b_ip, SERVER_PORT_IN_CONTAINER),
            (sandboxes.bridge_ip, b.port or 0),
            *((ip, host_port) for ip in host_addresses()),
        ]
        results = await reach(a, watcher, "reach", targets)
        assert len(results) == len(targets) and "connected" not in results.values(), results
    finally:
        listener.close()
        await b.stop_server(handle)
        await a.close()
        await b.close()
    async with aiodocker.Docker() as docker:
        mine = f"{LABEL_SANDBOXES}={(tmp_path / 'sandboxes' / 'seal').resolve()}"
        assert await docker.containers.list(all=True, filters={"label": [mine]}) == []  # sandboxes and sealers
    # The firewall lived in the sandboxes' own namespaces; Docker's port rules went with the containers. (Other
    # sweeps on this engine change the host's rules meanwhile, so only rules that could be ours are looked for.)
    assert [line for line in iptables().splitlines() if any(o in line for o in ours)] == []


async def test_only_a_granted_sandbox_reaches_the_gateway_port_and_nothing_else(
    tmp_path: Path, sandboxes: DockerFactory, watcher: MarkerWatcher
) -> None:
    """With Grant(llm=True) the gateway's address and port answer; other host ports and ungranted sandboxes do not."""
    [bridge] = await sandboxes.llm_hosts()
    gateway, other = socket.socket(), socket.socket()
    for s in (gateway, other):
        s.bind(("0.0.0.0", 0))
        s.listen()
    sandboxes.llm_serving(gateway.getsockname()[1])
    try:
        granted = sandboxes(tmp_path / "sandboxes" / "seal" / "c1-s0", "g", Grant(llm=True))
        plain = sandboxes(tmp_path / "sandboxes" / "seal" / "c1-s1", "p", Grant())
        await granted.prepare()
        await plain.prepare()
        targets = [(bridge, gateway.getsockname()[1]), (bridge, other.getsockname()[1])]
        gw, elsewhere = (await reach(granted, watcher, "granted", targets)).values()
        assert gw == "connected" and elsewhere != "connected", (gw, elsewhere)
        assert "connected" not in (await reach(plain, watcher, "plain", targets)).values()
    finally:
        gateway.close()
        other.close()


HOSTILE = f"""
import json, os, signal
out = {{}}
def attempt(name, fn):
    try:
        fn()
        out[name] = "allowed"
    except OSError as exc:
        out[name] = type(exc).__name__
status = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\\t" in line)
out["uid"], out["CapEff"] = os.getuid(), status["CapEff"].strip()
out["NoNewPrivs"] = status["NoNewPrivs"].strip()
attempt("write /", lambda: open("/evil", "w").write("x"))
attempt("write /usr", lambda: open("/usr/bin/evil", "w").write("x"))
attempt("write prompts", lambda: open("/stamina/prompts/t0000-a01-i00.md", "a").write("x"))
attempt("new prompt", lambda: open("/stamina/prompts/evil.md", "w").write("x"))
attempt("list control", lambda: os.listdir("/opt/stamina/control"))
attempt("forge marker", lambda: open("/opt/stamina/control/markers/evil.json", "w").write("{{}}"))
attempt("read job cmd", lambda: open("/opt/stamina/control/jobs/hostile/cmd").read())
attempt("read prompt", lambda: open("/stamina/prompts/t0000-a01-i00.md").read())
def big():
    with open("/workspace/big.bin", "wb") as fh:
        fh.seek({FSIZE})
        fh.write(b"x")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
attempt("past fsize", big)
attempt("write tmp", lambda: open("/tmp/ok", "w").write("x"))
attempt("write home", lambda: open(os.path.expanduser("~/ok"), "w").write("x"))
attempt("edit readme", lambda: open("/workspace/README.md", "a").write("x"))
st = os.statvfs("/tmp")
out["tmp_bytes"] = st.f_blocks * st.f_frsize
wrapper = os.getppid()
attempt("signal the wrapper", lambda: os.kill(wrapper, signal.SIGKILL))
attempt("signal pid 1", lambda: os.kill(1, signal.SIGKILL))
print(json.dumps(out))
"""


async def test_the_agent_runs_unprivileged_and_cannot_touch_the_control_files(
    tmp_path: Path, sandboxes: DockerFactory, watcher: MarkerWatcher
) -> None:
    """No uid 0, no capabilities, read-only root and prompts, control out of reach, fsize and /tmp bounded."""
    box = sandboxes(tmp_path / "sandboxes" / "seal" / "c1-s0", "h", Grant())
    await box.prepare()
    (box.host_control / "prompts" / "t0000-a01-i00.md").write_text("build the server")
    await box.seed({"README.md": "the rules"})  # as the engine writes it, after prepare: the agent's to edit
    marker, out = await as_agent(box, watcher, "hostile", HOSTILE)
    got = json.loads(out.strip().splitlines()[-1])
    assert marker["exit"] == 0 and marker["signal"] is None
    assert got["uid"] != 0 and got["CapEff"] == "0000000000000000" and got["NoNewPrivs"] == "1"
    for name in (
        "write /",
        "write /usr",
        "write prompts",
        "new prompt",
        "list control",
        "forge marker",
        "read job cmd",
        "signal the wrapper",
        "signal pid 1",
    ):
        assert got[name] in ("PermissionError", "OSError"), (name, got[name])  # EACCES, EPERM or EROFS
    assert got["read prompt"] == got["write tmp"] == got["write home"] == got["edit readme"] == "allowed"
    assert got["past fsize"] == "OSError"  # EFBIG
    assert got["tmp_bytes"] == TMP_MB << 20
    async with aiodocker.Docker() as docker:
        host = (await (await docker.containers.get(box.name)).show())["HostConfig"]
    assert host["MemorySwap"] == host["Memory"] > 0 and host["PidsLimit"] > 0
    assert host["CapDrop"] == ["ALL"] and set(host["CapAdd"]) == {"SETUID", "SETGID", "KILL"}
    assert f"{box.host_layer}:/harness:ro" in host["Binds"] and not any(str(PACKAGE) in b for b in host["Binds"])


async def test_a_workspace_past_its_quota_ends_the_harness(
    tmp_path: Path, sandboxes: DockerFactory, watcher: MarkerWatcher
) -> None:
    """The wrapper's watchdog kills a harness that fills the workspace past the quota; the marker says so."""
    box = sandboxes(tmp_path / "sandboxes" / "seal" / "c1-s0", "q", Grant())
    box.quota_kb = 1024
    await box.prepare()
    marker, _ = await as_agent(
        box,
        watcher,
        "fill",
        """
        import os, time
        with open("/workspace/fill.bin", "wb") as fh:
            fh.write(os.urandom(4 << 20))
        time.sleep(600)
    """,
    )
    assert marker["signal"] == 9 and marker["over_quota"] >= 4096


SERVE = """
import http.server
sys.stdout.flush()
http.server.HTTPServer(("0.0.0.0", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()
"""
CHATTY = """
import sys
for i in range(40 * 1024):
    sys.stdout.write("y" * 1000 + f" line {i}\\n")
print("harness done")
"""


async def test_what_a_harness_and_a_server_print_is_bounded_on_the_host(
    tmp_path: Path, sandboxes: DockerFactory, watcher: MarkerWatcher
) -> None:
    """40 MB printed by the harness and by the server reach the host as logs of a few MiB holding the latest lines."""
    box = sandboxes(tmp_path / "sandboxes" / "seal" / "c1-s0", "h", Grant())
    await box.prepare()
    marker, out = await as_agent(box, watcher, "chatty", CHATTY)
    assert marker["exit"] == 0
    assert len(out.encode()) <= 2 * HARNESS_LOG_LIMIT + 100 and out.endswith("harness done\n")
    (box.host_workspace / "chatty_server.py").write_text(textwrap.dedent(CHATTY) + SERVE)
    (box.host_workspace / "run_server.sh").write_text('exec python3 chatty_server.py "$1"\n')
    handle = await box.start_server(30, 5)
    try:
        log = (box.host_control / "server.log").read_bytes()
        assert len(log) <= 2 * SERVER_LOG_LIMIT + 100 and b"harness done" in log[-4000:]
    finally:
        await box.stop_server(handle)
