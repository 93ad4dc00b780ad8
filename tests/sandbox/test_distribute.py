"""Image distribution to a second engine (copied only when missing, checked by ID), the engine itself, and TLS."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from staminad.sandbox.docker.distribute import DistributionError, distribute, image_id
from staminad.sandbox.docker.engineconnect import Endpoint, local_socket
from staminad.sandbox.docker.enginespec import EngineSpec
from tests.helpers.dockerd import SecondEngine, make_tls

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


async def test_an_engine_holding_the_image_is_not_copied_to_again(
    second_engine: SecondEngine, sandbox_image: str
) -> None:
    """The fixture loaded the image with the local ID; a second distribution copies nothing."""
    local, other = Endpoint(EngineSpec(url=local_socket())), Endpoint(EngineSpec(url=second_engine.url))
    try:
        assert await image_id(other.client(), sandbox_image) == await image_id(local.client(), sandbox_image)
        assert await distribute(local.client(), other.client(), sandbox_image) == 0
    finally:
        await local.aclose()
        await other.aclose()


async def test_a_missing_image_is_copied_bounded_and_one_missing_locally_refused(
    second_engine: SecondEngine, sandbox_image: str
) -> None:
    """A missing image is copied to the engine within its size bound; too big or missing locally is one error."""
    tag = "staminabench/sandbox:distribute-test"
    local, other = Endpoint(EngineSpec(url=local_socket())), Endpoint(EngineSpec(url=second_engine.url))
    repo, _, name = tag.partition(":")
    await local.client().images.tag(sandbox_image, repo, tag=name)
    try:
        with pytest.raises(DistributionError, match="over 1 MiB"):
            await distribute(local.client(), other.client(), tag, second_engine.url, limit=1 << 20)
        assert await image_id(other.client(), tag) is None
        copied = await distribute(local.client(), other.client(), tag, second_engine.url)
        assert copied > 1 << 20 and await image_id(other.client(), tag) == await image_id(local.client(), tag)
        with pytest.raises(DistributionError, match="not on the local engine"):
            await distribute(local.client(), other.client(), "staminabench/sandbox:no-such-tag")
    finally:
        if await image_id(other.client(), tag) is not None:
            await other.client().images.delete(tag)
        await local.client().images.delete(tag)
        await local.aclose()
        await other.aclose()


def test_second_engine_starts_answers_and_leaves_nothing(tmp_path: Path) -> None:
    """A private dockerd answers /_ping within its bound; after remove, its processes and directory are gone."""
    engine = SecondEngine()
    try:
        engine.start()
        assert engine.ping()
    finally:
        engine.remove()
    assert not engine.root.exists() and not engine.ping()
    mark = str(engine.root).encode()
    assert not [p for p in Path("/proc").glob("[0-9]*") if _cmdline(p).find(mark) >= 0]


def _cmdline(proc: Path) -> bytes:
    try:
        return proc.joinpath("cmdline").read_bytes()
    except OSError:
        return b""


async def test_an_engine_over_tls_answers_only_a_client_of_its_ca(tmp_path: Path) -> None:
    """An engine with --tlsverify answers only a client holding its CA's files."""
    tls = make_tls(tmp_path / "tls")
    other = make_tls(tmp_path / "other")
    engine = SecondEngine(tls=tls)
    try:
        await anyio.to_thread.run_sync(engine.start)
        good = Endpoint(EngineSpec(url=engine.url, tls=str(tls)))
        plain = Endpoint(EngineSpec(url=engine.url))
        stranger = Endpoint(EngineSpec(url=engine.url, tls=str(other)))
        try:
            assert await good.ping() and (await good.client().system.info())["ID"]
            assert not await plain.ping() and not await stranger.ping()
            assert "SSL" in stranger.detail or "certificate" in stranger.detail.lower(), stranger.detail
        finally:
            for e in (good, plain, stranger):
                await e.aclose()
    finally:
        await anyio.to_thread.run_sync(engine.remove)
