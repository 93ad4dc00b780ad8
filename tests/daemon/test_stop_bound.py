"""A daemon's stop is bounded whatever its clean-up waits on: here a Docker engine stand-in that answers the
runtime's first questions (its version, the image) and then accepts every request and never answers one."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from staminad.sandbox.docker.image import LAYOUT, LAYOUT_LABEL
from tests.helpers.daemon import CLI, start
from tests.helpers.sweeps import write_sweep

pytestmark = pytest.mark.sweep

IMAGE = "staminabench/sandbox:hung-engine-standin"


class HungEngine:
    """A real unix socket server at `path`: `GET /version` and the image's inspect are answered (so a sweep gets
    past choosing its runtime); any other request is read and never answered, its connection held open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.unanswered: list[str] = []
        self.seen = threading.Condition()
        self._server = socket.socket(socket.AF_UNIX)
        self._server.bind(str(path))
        self._server.listen(64)
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return  # closed
            self._held.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = b""
        with conn.makefile("rb") as reader:
            while True:
                line = reader.readline()
                if not line:
                    return
                buffer = line
                while (header := reader.readline()) not in (b"\r\n", b"\n", b""):
                    buffer += header
                method, target = buffer.decode("latin-1").split()[:2]
                body = self._answer(method, target)
                if body is None:
                    with self.seen:
                        self.unanswered.append(f"{method} {target}")
                        self.seen.notify_all()
                    return  # the connection stays open, unanswered, until the test ends
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )

    @staticmethod
    def _answer(method: str, target: str) -> bytes | None:
        if method == "GET" and target.endswith("/version"):
            return json.dumps({"ApiVersion": "1.43", "Version": "24.0.0"}).encode()
        if method == "GET" and "/images/" in target and target.endswith("/json"):
            return json.dumps({"Id": "sha256:" + "0" * 64, "Config": {"Labels": {LAYOUT_LABEL: LAYOUT}}}).encode()
        return None

    def wait_for(self, what: str, timeout: float = 60) -> None:
        """Until a request whose line contains `what` is left unanswered."""
        with self.seen:
            assert self.seen.wait_for(lambda: any(what in r for r in self.unanswered), timeout), self.unanswered

    def close(self) -> None:
        self._server.close()
        for conn in self._held:
            conn.close()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[HungEngine]:
    hung = HungEngine(tmp_path / "engine.sock")
    try:
        yield hung
    finally:
        hung.close()


def test_a_stop_ends_the_daemon_in_bounded_time_while_its_clean_up_waits_on_a_hung_engine(
    tmp_path: Path, engine: HungEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop ends the daemon within --stop-timeout plus the grace while its clean-up waits on a hung engine."""
    # The cancelled sweep's sandbox clean-up asks the engine for its container: without the bound the stop waited on
    # each such call's own timeout (60 s) in turn.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{engine.path}")
    state = tmp_path / "state"
    state.mkdir()
    proc = start(state, runtime=None, extra=("--stop-timeout", "2"))
    try:
        path = write_sweep(tmp_path, "hung", ["reference"], runtime="docker", extra=f'image = "{IMAGE}"\n')
        assert subprocess.run([*CLI, "submit", str(path), "--state-dir", str(state)], timeout=120).returncode == 0
        engine.wait_for("/networks")  # the scenario's sandbox is being made: its engine never answers
        cancel = subprocess.Popen([*CLI, "cancel", "hung", "--state-dir", str(state)], stdout=subprocess.DEVNULL)
        engine.wait_for("/containers/staminabench-hung-")  # the cancelled scenario's clean-up asks for its container
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        took = time.monotonic() - began
        cancel.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    log = (state / "staminad.log").read_text()
    assert "stop: sweep hung still cleaning up after 2 s (an engine not answering?)" in log
    assert "stop: clean-up still waiting after 12 s" in log, log[-3000:]
    assert took < 50, took  # 2 s + 10 s of grace, on a loaded machine; the engine calls' own bound is 60 s each
