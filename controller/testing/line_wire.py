"""What the line devices' sans-IO tests (shuffler, shaker, shoe) share: frames spelled out here rather than
taken from the code under test, bytes cut at arbitrary points, line noise, checks every line session must
pass, and a `LineWire` that connects a simulated device to a host session directly, with the times passed
in. Needs hypothesis (pyproject's `test` extra) for its byte strategies."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st

from drivers.line.device import LineDeviceCore
from drivers.line.framing import MAX_LINE_BYTES, LineFramer, parse_frame
from drivers.readings import DeviceOnline, DeviceStatus, Reading
from drivers.session import DeviceCommand, DeviceSession


def xor_checksum(body: str) -> str:
    value = 0
    for byte in body.encode("ascii"):
        value ^= byte
    return f"{value:02X}"


def frame(body: str) -> bytes:
    return f"{body}*{xor_checksum(body)}\r\n".encode("ascii")


def raw(body: str) -> str:
    return f"{body}*{xor_checksum(body)}"


def bodies(data: bytes) -> list[str]:
    """The bodies of the (valid) lines in `data`."""
    out = []
    for line in LineFramer().feed(data):
        body = parse_frame(line)
        assert isinstance(body, str), f"not a valid frame: {line!r}"
        out.append(body)
    return out


def sent(session: DeviceSession) -> list[str]:
    """The bodies of what the session has to send."""
    return bodies(session.data_to_send())


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    """`data` cut at `cuts` (each taken modulo its length + 1), as a port may deliver it."""
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    return [data[a:b] for a, b in itertools.pairwise([0, *points, len(data)])]


def hello_received(session: Any, hello: str, now: float = 0.0) -> Any:
    """`session` connected at `now`, its STATUS? query taken, and the device's `HELLO <hello>` read."""
    session.connection_made(now)
    session.data_to_send()  # the STATUS? query, checked in its own test
    session.data_received(frame(f"HELLO {hello}"), now)
    return session


def assert_asks_status_then_online_on_hello(
    session: DeviceSession, device: str, hello: str, connected_at: float, hello_at: float
) -> None:
    assert session.connection_made(connected_at) == []
    assert sent(session) == ["STATUS?"]
    assert session.data_received(frame(f"HELLO {hello}"), hello_at) == [
        DeviceOnline(device=device, time=hello_at, raw=raw(f"HELLO {hello}"), detail=hello)
    ]


#: lines no protocol reads, whatever its messages, and the reason each is counted under
GARBAGE_LINES = [
    (b"\x00\x13\xfe\xff\r\n", "noise"),
    (b"X" * (MAX_LINE_BYTES + 10) + b"\r\n", "line too long"),
]


def assert_counted_not_read(session: DeviceSession, data: bytes, reason: str) -> None:
    """A bad line gives no reading, is counted under `reason`, and is not acknowledged."""
    assert session.data_received(data, 1.0) == []
    assert session.stats.rejected == {reason: 1}
    assert session.data_to_send() == b""  # nothing ACKed


def readings_in_pieces(session: DeviceSession, data: bytes, cuts: list[int]) -> list[Reading]:
    """What `session` reads from `data` arriving cut at `cuts`, a piece every 10 ms, ticked after each."""
    readings: list[Reading] = []
    now = 0.0
    for piece in chunked(data, cuts):
        now += 0.01
        readings += session.data_received(piece, now)
        session.tick(now)
    return readings


def feed_in_pieces(device: LineDeviceCore[Any, Any], data: bytes, cuts: list[int]) -> None:
    """Host bytes reach `device` cut at `cuts`, a piece every 50 ms; then it has a second to act."""
    now = 0.0
    for piece in chunked(data, cuts):
        now += 0.05
        device.receive(piece, now)
        device.poll(now)
    device.poll(now + 1.0)


def assert_only_spoiled_lines_rejected(session: Any, device: LineDeviceCore[Any, Any]) -> None:
    """The session rejected exactly the lines the device spoiled on purpose, and some were spoiled."""
    assert session.stats.rejected == {
        "bad checksum": device.injected["bad_checksum"],
        "noise": device.injected["noise"],
    }
    assert device.injected["bad_checksum"] > 0
    assert device.injected["noise"] > 0


#: one line of garbage without its line end, never a valid frame
line_noise = st.binary(min_size=1, max_size=40).filter(
    lambda n: b"\n" not in n and not isinstance(parse_frame(n.removesuffix(b"\r")), str)
)


class LineWire:
    """Connects a simulated device and a host session directly; `step` moves bytes both ways at `now`."""

    def __init__(self, device: LineDeviceCore[Any, Any], session: DeviceSession, deliver_acks: bool) -> None:
        self.device = device
        self.session: Any = session
        self.deliver_acks = deliver_acks
        self.readings: list[Reading] = []
        self.now = 0.0
        device.connected(0.0)
        self.session.connection_made(0.0)

    def step(self, now: float) -> bytes:
        self.now = now
        emitted = self.device.poll(now)
        self.readings += self.session.data_received(emitted, now)
        self.readings += self.session.tick(now)
        to_device = self.session.data_to_send()
        if self.deliver_acks or not to_device.startswith(b"ACK "):
            self.device.receive(to_device, now)
        return emitted

    def run(self, seconds: float, step: float = 0.05) -> None:
        end = self.now + seconds
        while self.now < end:
            self.step(round(self.now + step, 6))

    def send(self, name: str, **args: Any) -> None:
        self.session.command(DeviceCommand(name, args), self.now)

    def of(self, kind: type[Reading]) -> list[Any]:
        return [r for r in self.readings if isinstance(r, kind)]

    def states(self) -> list[str]:
        return [r.state for r in self.of(DeviceStatus)]
