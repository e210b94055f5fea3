"""The tests' own Mosquitto (`controller.testing.mosquitto`): a port another process took between `free_port`
and the broker's first start (the other worker of a parallel run) moves the broker to another free port,
never onto that process's listener; once a broker has run, its port is kept or the start fails."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.testing.mosquitto import HOST, MosquittoBroker, PortTaken, listens_on, require_mosquitto

pytestmark = pytest.mark.integration


@pytest.fixture
def other_listener() -> Iterator[socket.socket]:
    """A plain TCP listener of this test process: what another worker's broker would be on the port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        sock.listen()
        yield sock


def test_a_port_taken_before_the_first_start_moves_the_broker_to_another(
    tmp_path: Path, other_listener: socket.socket
) -> None:
    taken = other_listener.getsockname()[1]
    broker = MosquittoBroker(require_mosquitto(), tmp_path / "broker")
    broker.port = taken  # as if another process bound it after `free_port` chose it
    tried: list[int] = []
    start_on_port = broker._start_on_port

    def recording(timeout: float) -> None:
        tried.append(broker.port)
        start_on_port(timeout)

    broker._start_on_port = recording  # type: ignore[method-assign]
    broker.start()
    try:
        assert tried[0] == taken and broker.port == tried[-1] != taken
        assert broker._process is not None and listens_on(broker._process.pid, broker.port) is True
    finally:
        broker.kill()


def test_once_run_a_broker_keeps_its_port_or_fails_to_start(tmp_path: Path) -> None:
    broker = MosquittoBroker(require_mosquitto(), tmp_path / "broker")
    broker.start()
    port = broker.port
    broker.kill()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen()
        with pytest.raises(PortTaken):
            broker.start()  # its clients know this port: it does not move
    broker.start()
    try:
        assert broker.port == port and broker.running
    finally:
        broker.kill()


def test_listens_on_tells_the_listener_of_a_port(other_listener: socket.socket) -> None:
    port = other_listener.getsockname()[1]
    assert listens_on(os.getpid(), port) is True
    assert listens_on(os.getpid(), port + 1 if port < 65535 else port - 1) is False
