"""SimulatedPort serves a sans-IO device on a real pty (opened with pyserial) and on TCP."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import serial

from drivers.sim_port import SimulatedPort

pytestmark = pytest.mark.integration


class EchoDevice:
    """Echoes what the host sends, says HELLO when plugged in."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.connects: list[float] = []
        self.received = bytearray()

    def connected(self, now: float) -> None:
        self.connects.append(now)
        self.out += b"HELLO\n"

    def receive(self, data: bytes, now: float) -> None:
        self.received += data
        self.out += data

    def poll(self, now: float) -> bytes:
        out = bytes(self.out)
        self.out.clear()
        return out


async def read_until(port: serial.Serial, expected: bytes, timeout: float = 2.0) -> bytes:
    """Read from a non-blocking pyserial port while the event loop keeps serving the device."""
    got = bytearray()
    deadline = asyncio.get_running_loop().time() + timeout
    while expected not in got:
        got += port.read(4096)
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"expected {expected!r}, got {bytes(got)!r}")
        await asyncio.sleep(0.005)
    return bytes(got)


async def test_echo_over_pty_with_pyserial(tmp_path: Path) -> None:
    device = EchoDevice()
    port = SimulatedPort(device)
    link = str(tmp_path / "ttyECHO")
    try:
        path = await port.start_pty(link)
        assert path == link
        assert os.path.realpath(link).startswith("/dev/pts/")
        host = serial.Serial(path, 115200, timeout=0)
        # Raw mode both ways: CR, LF and high bytes arrive unchanged (no echo, no CRLF translation).
        payload = b"abc\r\n\x00\xff\x03\x1a\n"
        host.write(payload)
        echoed = await read_until(host, payload)
        assert echoed.endswith(payload)
        assert bytes(device.received) == payload
        assert len(device.connects) == 1
        host.close()
    finally:
        await port.stop()
    assert not os.path.lexists(link)


async def test_unplug_fails_host_read_and_replug_keeps_link(tmp_path: Path) -> None:
    device = EchoDevice()
    port = SimulatedPort(device)
    link = str(tmp_path / "ttyECHO")
    try:
        await port.start_pty(link)
        first_target = os.path.realpath(link)
        host = serial.Serial(link, 115200, timeout=0)
        host.write(b"x")
        await read_until(host, b"x")

        await port.unplug()
        assert not os.path.lexists(link)
        with pytest.raises(serial.SerialException):
            # select reports the hung-up pty readable; pyserial turns the empty read into an error
            host.timeout = 0.5
            host.read(1)
        host.close()

        await port.replug()
        assert os.path.lexists(link)
        assert len(device.connects) == 2
        host = serial.Serial(link, 115200, timeout=0)
        host.write(b"again")
        got = await read_until(host, b"again")
        assert b"again" in got
        host.close()
        assert os.path.realpath(link).startswith("/dev/pts/")
        assert first_target.startswith("/dev/pts/")
    finally:
        await port.stop()


async def test_silence_and_inject(tmp_path: Path) -> None:
    device = EchoDevice()
    port = SimulatedPort(device)
    try:
        path = await port.start_pty()
        host = serial.Serial(path, 115200, timeout=0)
        port.silence(True)
        host.write(b"quiet")
        await asyncio.sleep(0.1)
        assert host.read(4096) == b""
        assert bytes(device.received) == b"quiet"  # the device still hears the host
        port.inject(b"\x07noise\n")
        assert await read_until(host, b"\x07noise\n") == b"\x07noise\n"
        port.silence(False)
        host.write(b"loud")
        assert (await read_until(host, b"loud")).endswith(b"loud")
        host.close()
    finally:
        await port.stop()


async def test_echo_over_tcp_and_unplug() -> None:
    device = EchoDevice()
    port = SimulatedPort(device)
    try:
        url = await port.start_tcp()
        assert url.startswith("socket://127.0.0.1:")
        host_port = int(url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", host_port)
        assert await asyncio.wait_for(reader.readexactly(6), 2) == b"HELLO\n"
        writer.write(b"ping\n")
        assert await asyncio.wait_for(reader.readexactly(5), 2) == b"ping\n"

        await port.unplug()
        assert await asyncio.wait_for(reader.read(100), 2) == b""
        writer.close()
        with pytest.raises(OSError):
            await asyncio.open_connection("127.0.0.1", host_port)

        await port.replug()
        assert port.url == url
        reader, writer = await asyncio.open_connection("127.0.0.1", host_port)
        assert await asyncio.wait_for(reader.readexactly(6), 2) == b"HELLO\n"
        writer.close()
    finally:
        await port.stop()
