"""The shoe driver end to end on real pseudo-terminals: ShoeSimulator <-pty-> DeviceRunner + ShoeSession.

One suite, parametrised by the `shoe_link` fixture (the idea of python-can's back-to-back tests):

- `simulator` (always): a `ShoeSimulator` served on a pty; the test is the dealer.
- `real` (only when the environment variable `TABLECTL_REAL_SHOE_URL` is set, e.g. `/dev/ttyACM0` or
  `socket://10.0.0.5:4001`): the runner opens a relay pty that forwards every byte to and from the real shoe,
  so cable pulls, silence, noise and spoiled lines are produced the same way as with the simulator. The
  dealer's actions (draw N cards; try to draw from a locked shoe) are printed on the terminal for the person
  running the tests (the prompts bypass pytest's output capture, no `-s` needed). The card codes are then
  unknown, so those tests check counts, uniqueness and ACKs instead of codes. Waiting times are long enough
  for a person (`RealShoeLink.reading_timeout`, `quiet_period`). Example:
  `TABLECTL_REAL_SHOE_URL=/dev/ttyACM0 python -m pytest tests/integration/test_shoe_on_pty.py -k real`.

Nothing is skipped in either mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Protocol

import pytest

from drivers.capture import CaptureWriter, read_capture
from drivers.line.framing import LineFramer, checksum, encode_line, parse_frame
from drivers.readings import (
    CardSeen,
    CardUnread,
    CutCardSeen,
    DeviceOffline,
    DeviceOnline,
    DeviceStatus,
    Reading,
)
from drivers.runner import DeviceRunner
from drivers.session import DeviceCommand, UnknownDeviceCommand
from drivers.shoe.session import ShoeSession
from drivers.shoe.simulator import LineFaultInjector, LoggedLine, ShoeFaults, ShoeSimulator
from drivers.sim_port import SimulatedPort
from drivers.transport import LinkError, open_serial

pytestmark = pytest.mark.integration

REAL_SHOE_ENV = "TABLECTL_REAL_SHOE_URL"
SEQ_MESSAGES = ("CARD ", "NOREAD ", "RESCAN ", "CUT ")


# --- the two kinds of link ------------------------------------------------------------------------------


class ShoeLink(Protocol):
    name: str
    url: str
    reading_timeout: float  # how long a dealer action may take to show up
    quiet_period: float  # how long to watch for something that must NOT happen

    async def draw(self, count: int = 1) -> list[str] | None: ...
    async def draw_refused(self) -> None: ...
    def set_line_faults(self, faults: ShoeFaults) -> None: ...
    @property
    def injected(self) -> Counter[str]: ...
    @property
    def sent(self) -> list[LoggedLine]: ...
    @property
    def received(self) -> list[LoggedLine]: ...
    async def unplug(self) -> None: ...
    async def replug(self) -> None: ...
    def silence(self, on: bool) -> None: ...
    def inject(self, data: bytes) -> None: ...
    async def stop(self) -> None: ...


class SimulatedShoeLink:
    name = "simulator"
    reading_timeout = 5.0
    quiet_period = 0.6  # more than two retransmission periods

    def __init__(self, simulator: ShoeSimulator) -> None:
        self.simulator = simulator
        self.url = ""

    async def start(self, link_path: str) -> None:
        self.url = await self.simulator.start_pty(link_path)

    async def draw(self, count: int = 1) -> list[str] | None:
        device = self.simulator.device
        codes = device.cards[device.position : device.position + count]
        for _ in range(count):
            assert self.simulator.draw()
        return codes

    async def draw_refused(self) -> None:
        assert self.simulator.draw() is False

    def set_line_faults(self, faults: ShoeFaults) -> None:
        self.simulator.faults = faults

    @property
    def injected(self) -> Counter[str]:
        return self.simulator.device.injected

    @property
    def sent(self) -> list[LoggedLine]:
        return self.simulator.sent

    @property
    def received(self) -> list[LoggedLine]:
        return self.simulator.received

    async def unplug(self) -> None:
        await self.simulator.unplug()

    async def replug(self) -> None:
        await self.simulator.replug()

    def silence(self, on: bool) -> None:
        self.simulator.silence(on)

    def inject(self, data: bytes) -> None:
        self.simulator.inject(data)

    async def stop(self) -> None:
        await self.simulator.stop()


class RelayToRealShoe:
    """A `SimulatedDevice` that forwards to a real shoe, passing whole lines through a `LineFaultInjector`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.faults = LineFaultInjector(ShoeFaults())
        self.sent: list[LoggedLine] = []
        self.received: list[LoggedLine] = []
        self._from_device = bytearray()
        self._host_lines = LineFramer()
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None

    async def open(self) -> None:
        reader, self._writer = await open_serial(self.url)
        self._reader_task = asyncio.create_task(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while data := await reader.read(4096):
            self._from_device += data

    async def close(self) -> None:
        if self._reader_task is not None:
            self._reader_task.cancel()
            with contextlib.suppress(BaseException):
                await self._reader_task
        if self._writer is not None:
            self._writer.close()

    def connected(self, now: float) -> None:
        pass  # the real shoe does not see the relay's cable being pulled

    def receive(self, data: bytes, now: float) -> None:
        for line in self._host_lines.feed(data):
            self.received.append(LoggedLine(now, line.decode("latin-1")))
        if self._writer is not None:
            self._writer.write(data)

    def poll(self, now: float) -> bytes:
        end = self._from_device.rfind(b"\n")
        if end < 0:
            return b""  # only whole lines pass, so injected noise never splits one
        lines = bytes(self._from_device[: end + 1]).splitlines(keepends=True)
        del self._from_device[: end + 1]
        out = bytearray()
        for line in lines:
            for piece, kind in self.faults.apply(line):
                self.sent.append(LoggedLine(now, piece.rstrip(b"\r\n").decode("latin-1"), kind))
                out += piece
        return bytes(out)


class RealShoeLink:
    name = "real"
    reading_timeout = 120.0
    quiet_period = 8.0

    def __init__(self, url: str, tell_operator: Callable[[str], None]) -> None:
        self.relay = RelayToRealShoe(url)
        self.port = SimulatedPort(self.relay)
        self.tell = tell_operator
        self.url = ""

    async def start(self, link_path: str) -> None:
        await self.relay.open()
        self.url = await self.port.start_pty(link_path)

    async def draw(self, count: int = 1) -> list[str] | None:
        self.tell(f"DEALER: draw {count} card(s) from the shoe now, one at a time.")
        return None

    async def draw_refused(self) -> None:
        self.tell(f"DEALER: the gate is locked; try to draw a card within {self.quiet_period:g} s.")

    def set_line_faults(self, faults: ShoeFaults) -> None:
        self.relay.faults = LineFaultInjector(faults)

    @property
    def injected(self) -> Counter[str]:
        return self.relay.faults.injected

    @property
    def sent(self) -> list[LoggedLine]:
        return self.relay.sent

    @property
    def received(self) -> list[LoggedLine]:
        return self.relay.received

    async def unplug(self) -> None:
        await self.port.unplug()

    async def replug(self) -> None:
        await self.port.replug()

    def silence(self, on: bool) -> None:
        self.port.silence(on)

    def inject(self, data: bytes) -> None:
        self.port.inject(data)

    async def stop(self) -> None:
        await self.port.stop()
        await self.relay.close()


LINK_KINDS = ["simulator", *(["real"] if os.environ.get(REAL_SHOE_ENV) else [])]


@pytest.fixture(params=LINK_KINDS)
async def shoe_link(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ShoeLink]:
    link: SimulatedShoeLink | RealShoeLink
    if request.param == "simulator":
        link = SimulatedShoeLink(ShoeSimulator(decks=1, seed=11, cut_position=4))
    else:
        capture_manager: Any = request.config.pluginmanager.getplugin("capturemanager")

        def tell_operator(message: str) -> None:
            with capture_manager.global_and_fixture_disabled():
                print(f"\n>>> {message}", flush=True)

        link = RealShoeLink(os.environ[REAL_SHOE_ENV], tell_operator)
    await link.start(str(tmp_path / "ttySHOE"))
    try:
        yield link
    finally:
        await link.stop()


# --- the host side ---------------------------------------------------------------------------------------


class Table:
    """A runner with a ShoeSession on the link, recording every reading."""

    def __init__(self, url: str, capture_path: Path) -> None:
        self.session = ShoeSession("shoe1")
        self.readings: list[Reading] = []
        self.capture = CaptureWriter(capture_path)
        self.capture_path = capture_path
        self.runner = DeviceRunner(
            self.session,
            url,
            on_readings=self._on_readings,
            reconnect_min=0.05,
            reconnect_max=0.2,
            capture=self.capture,
        )
        self.task: asyncio.Task[None] | None = None

    async def _on_readings(self, readings: list[Reading]) -> None:
        self.readings += readings

    def of(self, kind: type[Reading]) -> list[Any]:
        return [reading for reading in self.readings if isinstance(reading, kind)]

    async def wait_until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not condition():
            if loop.time() > deadline:
                raise AssertionError(
                    f"timed out after {timeout} s waiting for {what}; readings: {self.readings}"
                )
            await asyncio.sleep(0.01)

    async def wait_for_count(self, kind: type[Reading], count: int, timeout: float) -> None:
        await self.wait_until(lambda: len(self.of(kind)) >= count, timeout, f"{count} x {kind.__name__}")


@contextlib.asynccontextmanager
async def running_table(url: str, capture_path: Path) -> AsyncIterator[Table]:
    host = Table(url, capture_path)
    host.task = asyncio.create_task(host.runner.run())
    try:
        yield host
    finally:
        host.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await host.task
        host.capture.close()


@pytest.fixture
async def table(shoe_link: ShoeLink, tmp_path: Path) -> AsyncIterator[Table]:
    async with running_table(shoe_link.url, tmp_path / "shoe1.capture.jsonl") as host:
        await host.wait_for_count(DeviceOnline, 1, timeout=5.0)
        yield host


def valid_lines(lines: list[LoggedLine], prefixes: tuple[str, ...]) -> list[str]:
    """Bodies of the lines that left the device intact (not spoiled, not noise) and start with a prefix."""
    bodies = []
    for line in lines:
        body = parse_frame(line.text.encode("latin-1"))
        if isinstance(body, str) and body.startswith(prefixes):
            bodies.append(body)
    return bodies


# --- the suite ---------------------------------------------------------------------------------------------


async def test_cards_arrive_once_each_despite_retransmissions_and_duplicates(
    shoe_link: ShoeLink, table: Table
) -> None:
    shoe_link.set_line_faults(ShoeFaults(bad_checksum_rate=0.3, duplicate_rate=0.5, seed=3))
    count = 12
    expected = await shoe_link.draw(count)  # one deck, cut card 4 from the end: no cut card in the first 12
    await table.wait_for_count(CardSeen, count, timeout=shoe_link.reading_timeout)
    # Stop spoiling lines, let the last retransmissions and ACKs settle, then compare exactly.
    injected = dict(shoe_link.injected)
    shoe_link.set_line_faults(ShoeFaults())
    await asyncio.sleep(shoe_link.quiet_period)

    cards = table.of(CardSeen)
    assert len(cards) == count
    if expected is not None:
        assert [card.code for card in cards] == expected
    refs = [card.ref for card in cards]
    assert len(set(refs)) == count
    assert all(card.raw.startswith(f"CARD {card.ref} {card.code}*") for card in cards)
    # Every intact copy of a seq message was acknowledged, and every copy after the first was dropped.
    intact_seq_copies = valid_lines(shoe_link.sent, SEQ_MESSAGES)
    acks = [line.text.split("*")[0] for line in shoe_link.received if line.text.startswith("ACK ")]
    assert len(acks) == len(intact_seq_copies)
    assert sorted(acks) == sorted(f"ACK {body.split()[1]}" for body in intact_seq_copies)
    assert table.session.stats.duplicates == len(intact_seq_copies) - count
    assert table.session.stats.duplicates >= 1
    # each spoiled copy was rejected for its checksum, nothing else
    assert injected.get("bad_checksum", 0) >= 1
    assert table.session.stats.rejected == {"bad checksum": injected["bad_checksum"]}


async def test_spoiled_lines_and_noise_are_counted_not_interpreted(shoe_link: ShoeLink, table: Table) -> None:
    shoe_link.set_line_faults(ShoeFaults(bad_checksum_rate=0.4, noise_rate=0.4, seed=5))
    expected = await shoe_link.draw(3)
    await table.wait_for_count(CardSeen, 3, timeout=shoe_link.reading_timeout)
    injected = dict(shoe_link.injected)
    shoe_link.set_line_faults(ShoeFaults())
    await asyncio.sleep(shoe_link.quiet_period)
    # bad lines made by hand, each with a different defect
    wrong_checksum = int(checksum(b"CARD 0999 AS"), 16) ^ 0x01
    bad_card = b"CARD 0999 AS*%02X\r\n" % wrong_checksum
    shoe_link.inject(bad_card)
    shoe_link.inject(b"CARD 0998 KS\r\n")
    shoe_link.inject(encode_line("DEAL 0997 QS"))
    shoe_link.inject(encode_line("CARD 97 QS"))
    shoe_link.inject(b"\x00\x7f\xff\x13line noise\r\n")
    shoe_link.inject(b"Z" * 400 + b"\r\n")
    await asyncio.sleep(0.2)

    if expected is not None:
        assert [card.code for card in table.of(CardSeen)] == expected
    assert len(table.of(CardSeen)) == 3
    assert table.session.stats.rejected == {
        "bad checksum": injected.get("bad_checksum", 0) + 1,
        "noise": injected.get("noise", 0) + 1,
        "missing checksum": 1,
        "unknown message": 1,
        "malformed fields": 1,
        "line too long": 1,
    }
    assert injected.get("bad_checksum", 0) + injected.get("noise", 0) >= 1
    acked = {line.text.split("*")[0] for line in shoe_link.received}
    assert not acked & {"ACK 0999", "ACK 0998", "ACK 0997"}


async def test_unplug_replug_delivers_the_unacked_card_exactly_once(
    shoe_link: ShoeLink, table: Table
) -> None:
    await shoe_link.unplug()
    await table.wait_for_count(DeviceOffline, 1, timeout=5.0)
    offline = table.of(DeviceOffline)[0]
    assert offline.reason.startswith("lost connection to ")
    assert not table.runner.connected

    expected = await shoe_link.draw(1)  # the card goes out while the cable is out: nobody ACKs it
    await asyncio.sleep(shoe_link.quiet_period)
    assert table.of(CardSeen) == []
    online_before = len(table.of(DeviceOnline))

    await shoe_link.replug()
    await table.wait_for_count(DeviceOnline, online_before + 1, timeout=5.0)
    await table.wait_for_count(CardSeen, 1, timeout=shoe_link.reading_timeout)
    await asyncio.sleep(shoe_link.quiet_period)
    cards = table.of(CardSeen)
    assert len(cards) == 1
    if expected is not None:
        assert cards[0].code == expected[0]
    assert table.runner.connected
    # reported offline once for the pull (retries do not repeat it), then online again
    assert len(table.of(DeviceOffline)) == 1
    kinds = [type(r) for r in table.readings if isinstance(r, DeviceOffline | DeviceOnline | CardSeen)]
    assert kinds[-3:] == [DeviceOffline, DeviceOnline, CardSeen]


async def test_silence_is_offline_after_3_s_and_online_when_it_talks_again(
    shoe_link: ShoeLink, table: Table
) -> None:
    shoe_link.silence(True)
    await table.wait_for_count(DeviceOffline, 1, timeout=5.0)
    assert table.of(DeviceOffline)[0].reason == "no data from device for 3 s"
    assert table.runner.connected  # the port is fine; the device is not talking
    online_before = len(table.of(DeviceOnline))
    shoe_link.silence(False)
    await table.wait_for_count(DeviceOnline, online_before + 1, timeout=3.0)  # next heartbeat
    assert len(table.of(DeviceOffline)) == 1


async def test_lock_refuses_draws_until_unlock(shoe_link: ShoeLink, table: Table) -> None:
    await table.runner.send(DeviceCommand("lock"))
    await table.wait_until(
        lambda: any(s.state == "LOCKED" for s in table.of(DeviceStatus)), 3.0, "STATE LOCKED"
    )
    await shoe_link.draw_refused()
    await asyncio.sleep(shoe_link.quiet_period)
    assert table.of(CardSeen) == []

    await table.runner.send(DeviceCommand("unlock"))
    await table.wait_until(lambda: table.of(DeviceStatus)[-1].state == "READY", 3.0, "STATE READY")
    expected = await shoe_link.draw(1)
    await table.wait_for_count(CardSeen, 1, timeout=shoe_link.reading_timeout)
    if expected is not None:
        assert table.of(CardSeen)[0].code == expected[0]
    with pytest.raises(UnknownDeviceCommand):
        await table.runner.send(DeviceCommand("shuffle"))
    bodies = [line.text.split("*")[0] for line in shoe_link.received]
    assert "LOCK" in bodies
    assert "UNLOCK" in bodies
    assert bodies[0] == "STATUS?"  # asked as soon as the link opened


async def test_capture_is_written_and_replays_to_the_same_readings(shoe_link: ShoeLink, table: Table) -> None:
    await shoe_link.draw(2)
    await table.wait_for_count(CardSeen, 2, timeout=shoe_link.reading_timeout)
    await asyncio.sleep(0.1)
    records = read_capture(table.capture_path)
    rx = b"".join(record.data for record in records if record.direction == "rx")
    tx = b"".join(record.data for record in records if record.direction == "tx")
    assert all(record.t is not None for record in records)
    assert [record.t for record in records] == sorted(record.t for record in records if record.t is not None)
    assert tx.startswith(encode_line("STATUS?"))
    for card in table.of(CardSeen):
        assert card.raw.encode() + b"\r\n" in rx
        assert encode_line(f"ACK {card.ref}") in tx

    # Replay: the same session class fed the captured bytes at the captured times gives the same cards.
    replayed = ShoeSession("shoe1")
    replay_readings: list[Reading] = []
    replay_readings += replayed.connection_made(records[0].t or 0.0)
    for record in records:
        if record.direction == "rx":
            replay_readings += replayed.data_received(record.data, record.t or 0.0)
    assert [r for r in replay_readings if isinstance(r, CardSeen)] == table.of(CardSeen)


# --- simulator-only scenarios ---------------------------------------------------------------------------


async def test_noread_rescan_and_cut_card_on_pty(tmp_path: Path) -> None:
    async with ShoeSimulator(cards=["AS", "KD", "7C", "ZZ", "2H", "3H"], cut_position=2) as simulator:
        await simulator.start_pty(str(tmp_path / "ttySHOE"))
        async with running_table(simulator.url, tmp_path / "capture.jsonl") as host:
            await host.wait_for_count(DeviceOnline, 1, timeout=5.0)
            assert simulator.draw()  # AS
            simulator.force_noread()
            assert simulator.draw()  # KD, not read
            await host.wait_for_count(CardUnread, 1, timeout=3.0)
            assert simulator.rescan()
            await host.wait_for_count(CardSeen, 2, timeout=3.0)
            assert simulator.draw()  # 7C
            assert simulator.draw()  # ZZ: a misread index -> unread, never a wrong card
            assert simulator.draw()  # the cut card, then 2H
            await host.wait_for_count(CardSeen, 4, timeout=3.0)
            await asyncio.sleep(0.3)

    seen = [
        (type(r).__name__, getattr(r, "code", ""))
        for r in host.readings
        if isinstance(r, CardSeen | CardUnread | CutCardSeen)
    ]
    assert seen == [
        ("CardSeen", "AS"),
        ("CardUnread", ""),
        ("CardSeen", "KD"),
        ("CardSeen", "7C"),
        ("CardUnread", ""),
        ("CutCardSeen", ""),
        ("CardSeen", "2H"),
    ]
    unread, rescanned = host.of(CardUnread)[0], host.of(CardSeen)[1]
    assert rescanned.rescan_of == unread.ref == rescanned.ref
    assert host.of(CardUnread)[1].raw.startswith("CARD ")
    assert host.session.stats.rejected == {"bad card code": 1}
    assert simulator.remaining == 1


async def test_over_tcp_socket_url(tmp_path: Path) -> None:
    async with ShoeSimulator(decks=1, seed=2) as simulator:
        url = await simulator.start_tcp()
        assert url.startswith("socket://127.0.0.1:")
        async with running_table(url, tmp_path / "capture.jsonl") as host:
            await host.wait_for_count(DeviceOnline, 1, timeout=5.0)
            assert host.of(DeviceOnline)[0].detail == "SIMSHOE 1.0.0 SIM0001"
            for _ in range(3):
                assert simulator.draw()
            await host.wait_for_count(CardSeen, 3, timeout=3.0)
            assert [card.code for card in host.of(CardSeen)] == simulator.device.cards[:3]

            await simulator.unplug()
            await host.wait_for_count(DeviceOffline, 1, timeout=3.0)
            assert simulator.draw()  # sent while nobody listens: retransmitted after the replug
            await simulator.replug()
            await host.wait_for_count(CardSeen, 4, timeout=5.0)
            await asyncio.sleep(0.6)
            assert [card.code for card in host.of(CardSeen)] == simulator.device.cards[:4]
            assert len(host.of(DeviceOffline)) == 1


async def test_runner_reports_a_missing_port_once_and_connects_when_it_appears(tmp_path: Path) -> None:
    link_path = str(tmp_path / "ttySHOE")
    async with ShoeSimulator(decks=1) as simulator, running_table(link_path, tmp_path / "c.jsonl") as host:
        await host.wait_for_count(DeviceOffline, 1, timeout=2.0)
        await asyncio.sleep(0.5)  # several retries, not reported again
        [offline] = host.of(DeviceOffline)
        assert offline.reason == f"serial port {link_path} not found (is the device plugged in?)"
        await simulator.start_pty(link_path)
        await host.wait_for_count(DeviceOnline, 1, timeout=3.0)
        assert host.runner.connected
        assert len(host.of(DeviceOffline)) == 1


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        # user info in a device server's URL: nobody listens on port 1, pyserial's own text quotes the URL
        (
            "socket://shoe:S3cr3tPW@127.0.0.1:1",
            "cannot connect to socket://***@127.0.0.1:1: connection refused",
        ),
        ("socket://shoe:S3cr3tPW@", "invalid device address 'socket://***@': "),
    ],
)
async def test_a_link_that_cannot_be_opened_never_names_a_password_in_its_url(url: str, shown: str) -> None:
    with pytest.raises(LinkError) as failed:
        await open_serial(url)
    assert "S3cr3tPW" not in str(failed.value) and str(failed.value).startswith(shown)
    readings: list[Reading] = []

    async def keep(batch: list[Reading]) -> None:
        readings.extend(batch)

    runner = DeviceRunner(ShoeSession("shoe1"), url, on_readings=keep, reconnect_min=0.05)
    task = asyncio.create_task(runner.run())
    try:
        for _ in range(200):
            if readings:
                break
            await asyncio.sleep(0.01)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    [offline] = [r for r in readings if isinstance(r, DeviceOffline)]
    assert "S3cr3tPW" not in offline.reason and offline.reason.startswith(shown)


async def test_runner_survives_a_failing_reading_consumer(tmp_path: Path) -> None:
    delivered: list[Reading] = []

    async def flaky(readings: list[Reading]) -> None:
        delivered.extend(readings)
        raise RuntimeError("consumer bug")

    async def until(condition: Callable[[], bool]) -> None:
        for _ in range(300):
            if condition():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"never happened; delivered: {delivered}")

    async with ShoeSimulator(decks=1) as simulator:
        await simulator.start_pty(str(tmp_path / "ttySHOE"))
        runner = DeviceRunner(ShoeSession("shoe1"), simulator.url, on_readings=flaky)
        task = asyncio.create_task(runner.run())
        try:
            await until(lambda: any(isinstance(r, DeviceOnline) for r in delivered))
            assert simulator.draw()
            assert simulator.draw()
            await until(lambda: len([r for r in delivered if isinstance(r, CardSeen)]) == 2)
            assert [r.code for r in delivered if isinstance(r, CardSeen)] == simulator.device.cards[:2]
            assert not task.done()
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
