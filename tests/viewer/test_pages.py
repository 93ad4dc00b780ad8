"""The viewer's pages over a real store, through the ASGI app: content, escaping, bad input, access control."""

from __future__ import annotations

import html
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from markupsafe import escape
from starlette.testclient import TestClient

from staminad.sandbox.bounded import bounded_tail
from staminad.viewer.app import create_app
from staminad.viewer.render import LiveLinks
from staminad.viewer.serve import is_loopback
from tests.helpers.viewer import SCRIPT, XSS_CONFIG, XSS_SWEEP, old_store

pytestmark = pytest.mark.sweep

REF, MUT, CRASH = "reference R=1 detailed", "mutant:500-on-wrong-type R=1 detailed", "fault:crash:once R=1 detailed"


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def scenario_url(sweep: str, configuration: str, seed: int) -> str:
    return LiveLinks().scenario(sweep, configuration, seed)


@pytest.fixture(scope="module")
def client(store: Path) -> TestClient:
    return TestClient(create_app(store))


def test_sweeps_page_lists_each_sweep_with_its_headline_table(client: TestClient) -> None:
    """The front page names every sweep, its progress, and per configuration turns passed ± SE."""
    r = client.get("/")
    text = _text(r.text)
    assert r.status_code == 200
    assert "vw" in text and "infra" in text and "2 of 2 scenarios finished" in text
    assert re.search(r"reference R=1 detailed 2 2 4\.0 ± 0\.0 100%", text)


def test_sweep_page_shows_summary_survival_and_the_outcome_grid(client: TestClient) -> None:
    """A sweep's page has the per-configuration table, a survival SVG and one grid row per scenario."""
    r = client.get("/sweep?name=vw")
    assert r.status_code == 200
    assert r.text.count("<polyline") == 3 and "turns survived" in r.text
    rows = re.findall(r"<tr><td>([^<]+)</td>\s*<td><a href=\"[^\"]+\">(\d+)</a></td>.*?</tr>", r.text, re.S)
    assert sorted(rows) == sorted((c, s) for c in (REF, MUT, CRASH) for s in ("0", "1"))
    grid = dict(re.findall(r"<tr><td>([^<]+)</td>\s*<td><a [^>]+>0</a></td>(.*?)</tr>", r.text, re.S))
    assert grid[REF].count(">P</td>") == 4  # turns 0..3 each passed at the first attempt
    assert ">F</td>" in grid[MUT]
    assert grid[CRASH].count(">P</td>") == 4  # a transient crash is retried as infra: nothing lost


def test_scenario_page_shows_failing_tests_with_request_and_response(client: TestClient, store: Path) -> None:
    """The failed mutant's page shows each failing test's request and response, the feedback, and durations."""
    r = client.get(scenario_url("vw", MUT, 0))
    assert r.status_code == 200
    conn = sqlite3.connect(store / "staminad.db")
    feedback = conn.execute(
        "SELECT a.feedback FROM attempts a JOIN scenarios s ON s.id = a.scenario_id JOIN "
        "configurations c ON c.id = s.config_id WHERE c.name = ? AND s.seed = 0 AND "
        "a.outcome = 'fail' ORDER BY a.id LIMIT 1",
        (MUT,),
    ).fetchone()[0]
    conn.close()
    request = re.search(r"request: (.+)", feedback)
    assert request is not None
    assert 'class="text request">' + request.group(1).strip() in r.text.replace("&#34;", '"')
    assert 'class="text response">500 ' in r.text and "server_crash" in r.text
    assert "<td>fail (server_crash)</td>" in r.text and "(('" not in r.text  # categories in words, not a tuple
    assert "feedback sent" in r.text and "harness log" in r.text and "server log of this attempt's start" in r.text


def test_agent_markup_is_shown_as_text_everywhere(client: TestClient) -> None:
    """Markup an agent wrote (prompt, feedback, test names, responses, logs, names) never becomes markup."""
    for url in ("/", LiveLinks().sweep(XSS_SWEEP), scenario_url(XSS_SWEEP, XSS_CONFIG, 0)):
        r = client.get(url)
        assert r.status_code == 200
        assert "<script>document" not in r.text and "agent<script>" not in r.text
    page = client.get(scenario_url(XSS_SWEEP, XSS_CONFIG, 0)).text
    escaped = str(escape(SCRIPT))
    assert escaped.startswith("&lt;script&gt;")
    for where in (
        "prompt ",
        "feedback ",
        "harness says ",
        "server says ",
        "POST /things ",
        "&lt;html&gt;",
        "wrong ",
        "failed ",
    ):
        assert where + escaped in page, where
    assert "100 in / 20 out" in page and "$0.0125" in page


def _code_sections(client: TestClient, configuration: str) -> list[tuple[str, str]]:
    """(summary words, section HTML) of each attempt's code change on a scenario's page, in order."""
    page = client.get(scenario_url("vw", configuration, 0)).text
    out = []
    for body in re.findall(r'<section class="attempt" id="a\d+">(.*?)</section>', page, re.S):
        found = re.search(r'<details id="a\d+-code" class="code-change"><summary>code change: ([^<]*)', body)
        assert found is not None, "every attempt has a code change section"
        out.append((html.unescape(found.group(1)), body))
    return out


def test_each_attempt_shows_its_code_change_beside_its_failing_tests(client: TestClient) -> None:
    """Every attempt shows its collapsed code change after its failing tests, or why an infra attempt has none."""
    ref = _code_sections(client, REF)
    assert len(ref) == 4 and ref[0][0].endswith("against the workspace as seeded (the first code kept)")
    assert [w.rsplit("against ", 1)[1] for w, _ in ref[1:]] == [f"turn {t}, attempt 1" for t in range(3)]
    assert '<span class="d-hdr">+++ b/refserver/app.py</span>' in ref[0][1] and '<span class="d-add">+' in ref[0][1]
    mutant = _code_sections(client, MUT)
    failed = next(body for _, body in mutant if "-failing" in body)
    assert failed.index("-failing") < failed.index("-code") < failed.index("-log")  # next to the failing tests
    assert any(w.endswith("against turn 0, attempt 1") for w, _ in mutant[1:2])
    crash = _code_sections(client, CRASH)
    assert "ended as an infrastructure failure" in crash[0][0]
    assert crash[1][0].endswith("against the workspace as seeded (the first code kept)")


def test_agent_code_in_a_diff_is_text(client: TestClient) -> None:
    """Markup in the agent's file names and code shows escaped in the code change, never as markup."""
    page = client.get(scenario_url(XSS_SWEEP, XSS_CONFIG, 0)).text
    assert "+++ b/index&lt;b&gt;.html" in page and "<td>index&lt;b&gt;.html</td>" in page
    assert "+&lt;p&gt;code says " + str(escape(SCRIPT)) in page and "<p>code says" not in page


def test_each_attempt_shows_its_own_server_log(client: TestClient) -> None:
    """An attempt shows the stored log of the server start that tested it, not the file a later start rewrote."""
    page = client.get(scenario_url(XSS_SWEEP, XSS_CONFIG, 0)).text
    assert "server says" in page and "a later start" not in page and "of this attempt's start" in page


def test_a_large_log_is_read_only_to_its_tail(store: Path) -> None:
    """A log larger than the bound is read from a whole line near its end, with its full size stated."""
    tail = bounded_tail(store / "sandboxes" / "xss" / "c1-s0" / "control" / "server.log", 1000)
    assert tail is not None and tail.cut and len(tail.text.encode()) <= 1000 and tail.text.endswith("last line\n")


def test_compare_page_pairs_scenarios_and_reports_wilcoxon(client: TestClient) -> None:
    """Comparing two configurations shows paired differences per seed and a Wilcoxon p."""
    r = client.get(LiveLinks().compare("vw", REF, MUT))
    text = _text(r.text)
    assert r.status_code == 200
    assert "on 2 shared scenarios" in text and "Wilcoxon signed-rank p =" in text
    assert "A ahead on 2, B ahead on 0, tied on 0" in text
    assert "Choose two configurations" in client.get("/compare?sweep=vw").text


def test_a_sweep_of_only_infra_failures_says_so(client: TestClient) -> None:
    """A sweep whose every scenario gave up on infrastructure says nothing measures the agent, with I cells."""
    r = client.get("/sweep?name=infra")
    assert r.status_code == 200 and "nothing here measures an" in r.text and ">I</td>" in r.text


def test_unknown_names_are_a_plain_not_found_page(client: TestClient) -> None:
    """An unknown sweep, configuration or seed is a 404 page naming it, not a traceback."""
    for url, words in (
        ("/sweep?name=nope", "no sweep 'nope'"),
        (scenario_url("vw", REF, 9), "no scenario with seed 9"),
        ("/compare?sweep=vw&a=x&b=y", "no configuration 'x'"),
    ):
        r = client.get(url)
        assert r.status_code == 404 and words in html.unescape(r.text) and "Traceback" not in r.text
    for url, words in (
        ("/sweep", "needs the query parameter 'name'"),
        ("/scenario?sweep=vw&configuration=x&seed=-1", "seed must be a non-negative integer"),
    ):
        r = client.get(url)
        assert r.status_code == 400 and words in html.unescape(r.text)


def test_empty_state_dir_is_a_clear_page(tmp_path: Path) -> None:
    """A state dir without a store yet shows how results will appear; the change mark still answers."""
    c = TestClient(create_app(tmp_path))
    r = c.get("/")
    assert r.status_code == 200 and "There is no state database" in r.text
    assert c.get("/api/mark").json() == {"mark": "no-store"}


def test_a_store_with_no_sweeps_is_a_clear_page(tmp_path: Path) -> None:
    """A store created by a daemon that has run nothing yet says how to start a sweep."""
    import anyio

    from state import Store

    async def make() -> None:
        async with await Store.open(tmp_path / "staminad.db"):
            pass

    anyio.run(make)
    assert "No sweeps recorded" in TestClient(create_app(tmp_path)).get("/").text


def test_a_store_from_an_older_migration_renders(tmp_path: Path) -> None:
    """A store written before LoC, horizon and gateway columns existed shows its sweep with a note."""
    state = old_store(tmp_path / "old")
    c = TestClient(create_app(state))
    front = c.get("/")
    assert front.status_code == 200 and "schema version 1 of" in front.text
    assert c.get("/sweep?name=old").status_code == 200
    page = c.get(scenario_url("old", "reference R=0 detailed", 0))
    assert page.status_code == 200 and "build it" in page.text


def test_a_store_from_a_newer_staminad_is_one_clear_message(tmp_path: Path) -> None:
    """A store at a schema version this viewer does not know is refused with a line saying to upgrade."""
    state = old_store(tmp_path / "new")
    conn = sqlite3.connect(state / "staminad.db")
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    r = TestClient(create_app(state)).get("/sweep?name=old")
    assert r.status_code == 200 and "newer than this staminad" in r.text


def test_every_response_forbids_other_origins(client: TestClient) -> None:
    """Pages, assets and the API carry a CSP allowing only this origin and no inline script."""
    for url in ("/", "/static/viewer.css", "/api/mark", "/sweep?name=nope", "/sweep"):
        csp = client.get(url).headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp


def test_a_token_guards_every_request(store: Path) -> None:
    """With a token, requests without it get 401; the token in the URL becomes a cookie and a redirect."""
    c = TestClient(create_app(store, token="s3cret"), follow_redirects=False)
    assert c.get("/").status_code == 401 and c.get("/api/mark").status_code == 401
    assert c.get("/?token=wrong").status_code == 401
    r = c.get("/sweep?name=vw&token=s3cret")
    assert r.status_code == 303 and r.headers["location"].endswith("/sweep?name=vw")
    assert c.get("/sweep?name=vw").status_code == 200  # the cookie now carries it
    assert (
        TestClient(create_app(store, token="s3cret")).get("/", headers={"Authorization": "Bearer s3cret"}).status_code
        == 200
    )


def test_loopback_hosts_are_told_apart() -> None:
    """Only loopback addresses and names serve without a token."""
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.4", "example.org"))


def test_view_command_on_a_busy_port_is_one_line(store: Path) -> None:
    """`staminad view` on a port already taken exits 2 with one line."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "staminad.cli", "view", "--state-dir", str(store), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in done.stderr


def test_report_on_bad_input_is_a_table_or_one_line(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sweep of only infra failures still reports; an old store and an empty store are one line each."""
    from staminad.cli import main

    assert main(["report", "infra", "--state-dir", str(store), "--bootstrap", "200"]) == 0
    assert "harness_crash" in capsys.readouterr().out
    for state, words in (
        (old_store(tmp_path / "old"), "older staminad (schema version 1 of"),
        (tmp_path / "empty", "no state"),
    ):
        for cmd in (["report"], ["export", "--out", str(tmp_path / "x.csv")]):
            assert main([*cmd, "--state-dir", str(state)]) == 2
            err = capsys.readouterr().err
            assert words in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("host", ["999.1.1.1", "192.0.2.1"])
def test_view_on_a_host_it_cannot_listen_on_asks_for_another_host(host: str) -> None:
    """A host that does not resolve, or is not this machine's, is named with "pick another --host" (not --port)."""
    from staminad.viewer.serve import ViewError, bind_tcp

    with pytest.raises(ViewError, match=r"pick another --host$"):
        bind_tcp(host, 0)


def test_view_socket_on_a_file_refuses_and_keeps_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`view --socket` naming the store (or any file that is not a socket) exits 2 in one line; the file stays."""
    from staminad.cli import main

    store = tmp_path / "staminad.db"
    store.write_bytes(b"SQLite format 3\x00 pages")
    assert main(["view", "--state-dir", str(tmp_path), "--socket", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "exists and is not a socket; it is left alone: pick another --socket" in err
    assert store.read_bytes() == b"SQLite format 3\x00 pages"


def test_bind_unix_on_a_live_socket_does_not_call_it_a_viewer() -> None:
    """A socket someone listens on (a daemon's control socket, say) is refused without claiming a viewer has it."""
    import socket
    import tempfile

    from staminad.viewer.serve import ViewError, bind_unix

    with tempfile.TemporaryDirectory(prefix="vw", dir="/tmp") as d:
        path = Path(d) / "staminad.sock"
        live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        live.bind(str(path))
        live.listen(1)
        try:
            with pytest.raises(ViewError, match="another process is listening on") as refused:
                bind_unix(path)
            assert "viewer" not in str(refused.value) and path.exists()
        finally:
            live.close()
