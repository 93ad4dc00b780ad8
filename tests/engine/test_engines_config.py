"""`[run] engines` and `--engine`: each bad entry named in its own line, fingerprints that ignore where a sweep runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import EngineInfo, SweepInfo
from staminad.commands.args import UsageError, check_engines
from staminad.commands.clients import info_lines
from staminad.engine.config import SweepError, parse_sweep
from staminad.sandbox.docker.enginespec import EngineSpec, parse_flag, published_host

BASE = b"""
name = "e"
[matrix]
agents = ["reference"]
[run]
"""


def test_every_bad_engine_entry_is_its_own_line(tmp_path: Path) -> None:
    """Four faults in three entries (scheme, slots, missing TLS files, a repeat) give one line each."""
    tls = tmp_path / "tls"
    tls.mkdir()
    (tls / "ca.pem").write_text("x")
    text = BASE + (
        b'engines = [{ url = "ftp://h" }, { url = "tcp://h:2376", slots = 0, tls = "' + str(tls).encode() + b'" },'
        b' { url = "tcp://h:2376" }]\n'
    )
    with pytest.raises(SweepError) as err:
        parse_sweep(text, tmp_path / "s.toml")
    lines = str(err.value).splitlines()
    assert len(lines) == 4, lines
    assert "run.engines[0]: url 'ftp://h' must start with unix://, tcp:// or ssh://" in lines[0]
    assert "run.engines[1]: tcp://h:2376: slots must be 1..4096 (got 0)" in lines[1]
    assert "lacks cert.pem, key.pem" in lines[2] and "run.engines[2]: tcp://h:2376 is listed twice" in lines[3]


def test_engines_leave_the_fingerprint_alone(tmp_path: Path) -> None:
    """The same sweep with or without engines has one fingerprint: it may resume on other engines."""
    _, plain = parse_sweep(BASE, tmp_path / "s.toml")
    spread, fp = parse_sweep(BASE + b'engines = [{ url = "tcp://10.0.0.5:2376", slots = 32 }]\n', tmp_path / "s.toml")
    assert fp == plain and spread.run.engines == [EngineSpec(url="tcp://10.0.0.5:2376", slots=32)]


def test_the_engine_flag_and_where_ports_are_reached() -> None:
    """`URL[,slots=N][,tls=DIR]` parses; a bad option or a repeated URL is one line; ports are on the engine's host."""
    assert parse_flag("ssh://bench@gpu3,slots=16") == EngineSpec(url="ssh://bench@gpu3", slots=16)
    with pytest.raises(ValueError, match="expected URL"):
        parse_flag("tcp://h:1,cpus=3")
    with pytest.raises(UsageError, match="given twice"):
        check_engines([parse_flag("tcp://h:1"), parse_flag("tcp://h:1,slots=2")])
    assert [
        published_host(parse_flag(u)) for u in ("unix:///var/run/docker.sock", "tcp://10.0.0.5:2376", "ssh://b@gpu3")
    ] == [
        "127.0.0.1",
        "10.0.0.5",
        "gpu3",
    ]


def test_status_shows_each_engine_and_its_health() -> None:
    """`staminad status` gives a line per engine: healthy or why not, this sweep's scenarios, slots in use."""
    info = SweepInfo(
        sweep="s",
        status="running",
        fingerprint="f",
        engines=(
            EngineInfo(url="unix:///var/run/docker.sock", slots=8, used=3, healthy=True, scenarios=2),
            EngineInfo(url="tcp://10.0.0.5:2376", slots=4, used=0, healthy=False, detail="/_ping: TimeoutError"),
        ),
    )
    assert info_lines(info)[1:] == [
        "  engine unix:///var/run/docker.sock: healthy; 2 of this sweep's scenarios, 3/8 slots",
        "  engine tcp://10.0.0.5:2376: not answering (/_ping: TimeoutError); 0 of this sweep's scenarios, 0/4 slots",
    ]


def test_an_engine_s_gateway_is_an_ipv4_address_a_container_can_reach(tmp_path: Path) -> None:
    """`gateway` takes an IPv4 address, in the file and in `--engine`; a name, loopback or IPv6: one line each."""
    assert parse_flag("tcp://10.0.0.5:2376,slots=8,gateway=10.0.0.2").gateway == "10.0.0.2"
    text = BASE + b'engines = [{ url = "tcp://h:1", gateway = "me" }, { url = "tcp://g:1", gateway = "127.0.0.1" }]\n'
    with pytest.raises(SweepError) as err:
        parse_sweep(text, tmp_path / "s.toml")
    lines = str(err.value).splitlines()
    assert len(lines) == 2, lines
    assert "gateway must be an IP address of this host, not 'me'" in lines[0]
    assert "gateway 127.0.0.1 cannot be reached from a container" in lines[1]
    with pytest.raises(ValueError, match="gateway ::1 cannot be reached"):
        parse_flag("tcp://h:1,gateway=::1")


@pytest.mark.anyio
async def test_real_harnesses_on_an_engine_elsewhere_need_its_gateway() -> None:
    """An engine on another host needs a `gateway` address (refused naming the fix) and is served there."""
    from protocol.errors import UsageError as Refused
    from staminad.engine.config import RunSettings
    from staminad.sandbox.docker.enginepool import EnginePool

    pool = EnginePool(RunSettings(), [EngineSpec(url="tcp://10.0.0.5:2376")])
    with pytest.raises(Refused, match=r"give its entry gateway = .*--engine URL,gateway=IP"):
        await pool.llm_hosts()
    assert await EnginePool(RunSettings(), [EngineSpec(url="tcp://10.0.0.5:2376", gateway="10.0.0.2")]).llm_hosts() == [
        "10.0.0.2"
    ]
