"""The viewer in a real browser: Debian's chromium, headless, driven by Playwright, against `staminad view`.

Each page renders, a failing test's request and response show, agent markup stays text, a new attempt of a
running sweep appears without a reload, and no request goes anywhere but 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from staminad.cli import main
from tests.helpers import wait_listening
from tests.helpers.lines import Lines
from tests.helpers.sweeps import write_sweep
from tests.helpers.viewer import XSS_CONFIG, XSS_SWEEP

pytestmark = [pytest.mark.browser, pytest.mark.sweep]

MUT = "mutant:500-on-wrong-type R=1 detailed"
WAIT_MS = 60_000  # the longest any page wait may take


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium, installed with apt when missing and we are root (Playwright downloads no browser)."""
    found = shutil.which("chromium")
    if found is None and os.geteuid() == 0:
        install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        if subprocess.run(install, capture_output=True, env=env, timeout=900).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env, timeout=600, check=True)
            subprocess.run(install, capture_output=True, env=env, timeout=900, check=True)
        found = shutil.which("chromium")
    if found is None:
        pytest.fail("the browser test needs Debian's chromium: apt-get install chromium")
    return found


def _spawn(*args: str) -> tuple[subprocess.Popen[str], Lines]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "staminad.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.stdout is not None
    return proc, Lines(proc.stdout)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


@contextmanager
def _viewer(state: Path) -> Iterator[str]:
    proc, lines = _spawn("view", "--state-dir", str(state), "--port", "0")
    try:
        line = lines.wait_for("http://127.0.0.1:", timeout=60)
        yield line.split(" at ", 1)[1].split(";", 1)[0].rstrip("/")
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=chromium,
            args=[
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--disable-default-apps",
                "--disable-sync",
            ],
        )
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page whose every request is recorded; any that is not for 127.0.0.1 is also refused."""
    context = browser.new_context()
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))

    def route(r: Any) -> None:
        if urlsplit(r.request.url).hostname == "127.0.0.1":
            r.continue_()
        else:
            r.abort()

    context.route("**/*", route)
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    yield pg
    context.close()
    assert requests and {urlsplit(u).hostname for u in requests} == {"127.0.0.1"}, requests


@pytest.fixture(scope="module")
def url(store: Path) -> Iterator[str]:
    with _viewer(store) as base:
        yield base


def test_each_page_renders_in_the_browser(page: Any, url: str) -> None:
    """From the front page a user clicks through a sweep, a failed scenario and a comparison."""
    page.goto(url + "/")
    assert page.locator("h1").inner_text() == "Sweeps"
    page.get_by_role("link", name="vw", exact=True).click()
    assert page.locator("svg.survival polyline").count() == 3
    assert page.locator("table.grid tbody tr").count() == 6
    page.locator("table.grid tbody tr", has_text=MUT).first.get_by_role("link").click()
    first = page.locator("section.attempt").first
    assert "Turn 0, attempt 1" in first.locator("h3").inner_text()
    request = first.locator("pre.request").first
    response = first.locator("pre.response").first
    assert request.is_visible() and response.is_visible()
    assert request.inner_text().split()[0] in ("GET", "POST", "PUT", "PATCH", "DELETE")
    assert response.inner_text().startswith("500")
    page.get_by_role("link", name="vw").click()
    page.get_by_role("link", name="compare two configurations").click()
    page.select_option("select[name=a]", "reference R=1 detailed")
    page.select_option("select[name=b]", MUT)
    page.get_by_role("button", name="compare").click()
    assert "Wilcoxon signed-rank p" in page.locator("p.summary").inner_text()
    assert page.locator("table.pairs tbody tr").count() == 2


def test_agent_written_script_is_shown_as_text(page: Any, url: str) -> None:
    """A `<script>` an agent put in a prompt, a response or its log is visible text and never runs."""
    from staminad.viewer.render import LiveLinks

    page.goto(url + LiveLinks().scenario(XSS_SWEEP, XSS_CONFIG, 0))
    assert page.title() != "pwned" and page.evaluate("window.__pwned === undefined")
    assert page.locator("pre.prompt").text_content().startswith("prompt <script>document.title")
    assert "<script>" in page.locator("pre.response").inner_text()
    assert "harness says <script>" in page.locator("pre.log").first.text_content()
    assert page.locator("main script").count() == 0


def test_a_new_attempt_appears_while_a_sweep_runs(page: Any, tmp_path: Path) -> None:
    """While a sweep runs, its next attempt shows on an open scenario page without a reload."""
    path = write_sweep(tmp_path, "live", ["manual"], seeds="0", turns=1, retries=1)
    path.write_text(path.read_text().replace("turn_timeout = 20", "turn_timeout = 600"))
    state = tmp_path / "state"
    sweep, lines = _spawn("run", str(path), "--state-dir", str(state), "--runtime", "local")
    try:
        marker = lines.wait_for("staminad done --marker ").rsplit("--marker ", 1)[1].strip()
        with _viewer(state) as base:
            from playwright.sync_api import expect

            from staminad.viewer.render import LiveLinks

            navigations: list[str] = []
            page.on("framenavigated", lambda f: navigations.append(f.url) if f == page.main_frame else None)
            page.goto(base + LiveLinks().scenario("live", "manual R=1 detailed", 0))
            rows = page.locator("table.timeline tbody tr")
            assert rows.count() == 1 and "launched" in rows.first.inner_text()
            expect(page.locator("#live-status")).to_have_text("live", timeout=WAIT_MS)  # polling has begun
            assert main(["done", "--marker", marker, "--exit", "1"]) == 0  # the harness crashed: an infra retry
            lines.wait_for("staminad done --marker ")  # the engine launched the next attempt
            expect(rows).to_have_count(2, timeout=WAIT_MS)
            assert "infra (harness_crash)" in rows.first.inner_text()
            assert len(navigations) == 1  # updated in place, never reloaded
    finally:
        _stop(sweep)


def test_tui_served_to_a_browser_loads_nothing_from_the_internet(page: Any, tmp_path: Path) -> None:
    """`stamina-tui --serve` gives the browser its font from its own static files, not a web font service."""
    import socket

    with socket.socket() as probe:  # a free port for the server to take
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "--serve", "--port", str(port), "--socket", str(tmp_path / "none.sock")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert proc.stdout is not None
        Lines(proc.stdout).wait_for(f":{port}", timeout=60)
        wait_listening(port, proc, timeout=60)  # textual-serve prints its address before aiohttp binds it
        fonts: list[tuple[str, int]] = []
        page.on("response", lambda r: fonts.append((r.url, r.status)) if r.url.endswith(".ttf") else None)
        page.goto(f"http://127.0.0.1:{port}/")
        assert page.evaluate("document.fonts.ready.then(() => document.fonts.check('16px \"Roboto Mono\"'))")
        assert fonts and all(status == 200 and urlsplit(u).hostname == "127.0.0.1" for u, status in fonts)
    finally:
        _stop(proc)


def test_the_ops_page_shows_a_live_sweep_and_refreshes_itself(page: Any, tmp_path: Path) -> None:
    """/ops shows a live sweep with its slots, the box, GPUs and sparklines, and refetches itself in place."""
    path = write_sweep(tmp_path, "opslive", ["manual"], seeds="0-2", turns=1)
    path.write_text(path.read_text().replace("turn_timeout = 20", "turn_timeout = 600"))
    state = tmp_path / "state"
    daemon, lines = _spawn("start", "--state-dir", str(state), "--runtime", "local", "--parallel", "2")
    try:
        lines.wait_for("staminad: serving")
        submitted = subprocess.run(  # its own process: Playwright's loop already runs in this thread
            [sys.executable, "-m", "staminad.cli", "submit", str(path), "--state-dir", str(state)],
            cwd=Path(__file__).resolve().parents[2],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert submitted.returncode == 0, submitted.stderr
        with _viewer(state) as base:
            from playwright.sync_api import expect

            page.goto(base + "/ops")
            assert page.locator("h1").inner_text() == "Ops: the box at a glance"
            row = page.locator("#ops-sweeps tr", has_text="opslive")
            expect(row).to_contain_text("running", timeout=WAIT_MS)
            expect(page.locator("#ops-slots")).to_contain_text("2 daemon-wide scenario slots", timeout=WAIT_MS)
            assert "CPUs" in page.locator("#ops-box").inner_text()
            assert page.locator("#ops-gpus").count() + page.locator("#ops-gpu-note").count() == 1
            assert page.locator("#ops-history svg.spark polyline").count() >= 4
            expect(page.locator("main#live")).to_have_attribute("data-refreshed", "1", timeout=WAIT_MS)
    finally:
        _stop(daemon)
