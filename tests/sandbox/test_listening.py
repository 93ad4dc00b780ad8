"""listening: the socket diagnostics dump names exactly the listening sockets on a port, as the tables do."""

from __future__ import annotations

import os
import socket

import pytest

from staminad.sandbox.inside import listening


def _inode(sock: socket.socket) -> str:
    return f"socket:[{os.fstat(sock.fileno()).st_ino}]"


@pytest.mark.skipif(not hasattr(socket, "AF_NETLINK"), reason="socket diagnostics are Linux's")
def test_the_dump_names_the_listeners_of_the_port_and_nothing_else() -> None:
    """A listener on the port is named, as /proc/net/tcp names it; a connection to it and other ports are not."""
    with socket.socket() as server, socket.socket() as other:
        server.bind(("127.0.0.1", 0))
        server.listen()
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = server.accept()
            with accepted:
                found = listening.sockets(port)
                assert found == {_inode(server)}
                assert found == listening._tables(port)
                assert _inode(client) not in listening.sockets(client.getsockname()[1])
    assert listening.sockets(port) == set()


def test_without_netlink_the_tables_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel that refuses the dump gets the /proc tables' answer instead of an error."""

    def refused(family: int, port: int) -> set[str]:
        raise OSError("refused")

    monkeypatch.setattr(listening, "_dump", refused)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert listening.sockets(server.getsockname()[1]) == {_inode(server)}
