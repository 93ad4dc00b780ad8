"""The socket client under the monitor: a request racing a connection going down fails with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import ListSweeps, SweepList
from protocol.client import Client, ClientError
from tests.helpers.inprocess import running_daemon

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


async def test_a_request_on_a_connection_closed_under_it_is_a_client_error(tmp_path: Path) -> None:
    """Closing our side of the socket turns the next request into ClientError, not ClosedResourceError."""
    state = tmp_path / "st"
    async with running_daemon(state), Client(state / "staminad.sock", name="test") as client:
        assert isinstance(await client.request(ListSweeps()), SweepList)
        assert client.stream is not None
        await client.stream.aclose()
        with pytest.raises(ClientError, match="closed"):
            await client.request(ListSweeps())
