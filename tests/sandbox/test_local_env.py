"""The local runtime hands harness and server an allow-listed environment, never the daemon's own."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from staminad.engine.markers import MarkerWatcher
from staminad.sandbox.base import marker_path
from staminad.sandbox.local import PASSED_ENV, LocalSandbox
from staminad.sandbox.ports import PortAllocator

pytestmark = pytest.mark.anyio

SECRET = "sk-daemon-secret-do-not-leak"


def dumped(path: Path) -> dict[str, str]:
    """The environment `env -0` wrote (not Python's: a pyenv shim on PATH would add its own variables)."""
    return dict(item.split("=", 1) for item in path.read_text().split("\0") if item)


async def test_secrets_in_the_daemon_environment_reach_neither_harness_nor_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watcher: MarkerWatcher
) -> None:
    """Secrets in the daemon's environment reach neither harness nor server: only the allow-lists pass."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "STAMINAD_STATE_DIR"):
        monkeypatch.setenv(name, SECRET)
    box = LocalSandbox(tmp_path / "box", PortAllocator(31130, 31139, lock_dir=tmp_path / "locks"))
    await box.prepare()
    ws = box.host_workspace
    await box.launch(
        "j",
        ["sh", "-c", f"exec /usr/bin/env -0 > {ws / 'harness.env'}"],
        {"STAMINA_LLM_BASE_URL": "http://127.0.0.1:9/g/token/v1"},
    )
    marker = await watcher.wait(marker_path(box.host_control, "j"), 30)
    assert marker is not None and marker["exit"] == 0
    (ws / "run_server.sh").write_text('/usr/bin/env -0 > server.env\nexec python3 -m http.server "$1"\n')
    handle = await box.start_server(20)
    try:
        async with httpx.AsyncClient() as client:
            assert (await client.get(handle.url, timeout=10)).status_code == 200
    finally:
        await box.stop_server(handle)
    harness, server = dumped(ws / "harness.env"), dumped(ws / "server.env")
    for env in (harness, server):
        assert SECRET not in json.dumps(env)
    allowed = set(PASSED_ENV) | {"HOME", "PWD", "SHLVL", "_", "OLDPWD"}
    assert set(harness) - allowed == {"STAMINA_LLM_BASE_URL", "STAMINABENCH_AGENT_OF"}  # the tag: no secret
    assert set(server) - allowed == {"STAMINABENCH_SERVER_OF"}
