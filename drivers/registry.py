"""Protocol registry: config says `protocol = "shoe-line"`, this finds everything about it: one `Protocol`
record each, with its session and options, how its link is opened, and its simulator (the fault switches and
actions of `tablectl simulate`, and how the demo runs it). Nothing else in the project switches on a device
kind: `drivers.simulate` and `controller.demo` read these records.

A vendor's real protocol is one more record here (like python-can's interface registry).

Two kinds of device: byte streams (a `DeviceSession` driven by `drivers.runner`) and cameras (frames, driven
by `drivers.camera.CameraRunner`; `port` is the frame source: a device index or path, a stream URL, a
GStreamer pipeline, `folder:<dir>`, `synthetic`, or `synthetic:<name>` for one of the camera record's
`renderers`). Both report health with the same readings. A camera needs OpenCV and numpy
(`pip install 'tablectl[camera]'`): its record is loaded only when a camera is asked for
(`protocol("camera")`), so that a card or roulette table never imports them and runs without them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from drivers.hid.session import HidBarcodeSession
from drivers.hid.simulator import SimulatedScanner
from drivers.hid.usb import open_usb_hid
from drivers.session import DeviceSession
from drivers.shaker.session import ShakerSession
from drivers.shaker.simulator import ShakerFaults, ShakerSimulator
from drivers.shoe.session import ShoeSession
from drivers.shoe.simulator import DEFAULT_CUT_POSITION, ShoeFaults, ShoeSimulator
from drivers.shuffler.session import ShufflerSession
from drivers.shuffler.simulator import ShufflerFaults, ShufflerSimulator
from drivers.transport import open_serial
from drivers.wheel.session import WheelSession
from drivers.wheel.simulator import WheelFaults, WheelSimulator

if TYPE_CHECKING:  # the camera's modules need numpy: loaded with its record only (`_camera`)
    from drivers.camera.sources import RendererFactory

log = logging.getLogger(__name__)

#: what a line on the simulator's standard input does: name -> (help, function of the line's arguments)
Actions = dict[str, tuple[str, Callable[..., Any]]]


class MissingExtra(ImportError):
    """A device needs a package of an install extra that is not installed (one line, for the operator)."""


CAMERA_NEEDS = "the camera needs OpenCV: pip install 'tablectl[camera]'"


@dataclass(frozen=True, slots=True)
class SimulatorSettings:
    """What `tablectl simulate` and the demo make a simulator with (each takes what applies to it)."""

    seed: int = 1
    #: the fault switches (the simulator's faults dataclass), None: the simulator's defaults
    faults: Any = None
    speed: float = 1.0
    decks: int = 8
    #: a shoe's cut card: this many cards before the end (None: a pack without one)
    cut_position: int | None = DEFAULT_CUT_POSITION


@dataclass(frozen=True, slots=True)
class Simulated:
    """A protocol's simulator as `tablectl simulate <device>` serves it on a pty or a TCP port."""

    #: the name `tablectl simulate` knows it by
    device: str
    #: its fault switches: a dataclass whose fields `--faults name=value,...` sets
    faults: type[Any]
    #: the simulator, made with the command's settings
    make: Callable[[SimulatorSettings], Any]
    #: what lines on standard input do to it, beside what every simulated device takes (`common_actions`)
    actions: Callable[[Any], Actions] = lambda simulator: {}
    #: the demo's faults (`tablectl demo`, faults on), from the seed
    demo_faults: Callable[[int], Any] | None = None
    #: the demo's speed
    demo_speed: float = 1.0
    #: an automatic dealer (`--deal-every SECONDS`), None: the device plays by itself or waits for stdin
    auto_deal: Callable[[Any, float, SimulatorSettings], Coroutine[Any, Any, None]] | None = None


@dataclass(frozen=True, slots=True)
class Protocol:
    name: str
    #: the byte session (None: a camera, run by `drivers.camera`, which has none)
    session: type[DeviceSession] | None
    #: the simulator class (the test suite's, the demo's)
    simulator: type[Any]
    #: the model of `[devices.<name>.options]` (None: the session's `Options`)
    options: type[BaseModel] = None  # type: ignore[assignment]
    #: how a runner opens its link, with the shape of `drivers.transport.open_serial`; `port` is its address
    open_link: Callable[..., Any] | None = open_serial
    #: its port is a USB address (`usb:VVVV:PPPP[:SERIAL]`), opened with pyusb
    usb: bool = False
    #: served by `tablectl simulate` (None: not on a pty or a TCP port)
    simulated: Simulated | None = field(default=None)
    #: a camera's synthetic pictures: name -> renderer class, for `port = "synthetic:<name>"`
    renderers: Mapping[str, RendererFactory] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.options is None:
            if self.session is None:
                raise ValueError(f"{self.name}: a protocol without a session names its options model")
            object.__setattr__(self, "options", self.session.Options)

    @property
    def camera(self) -> bool:
        return self.session is None


def common_actions(simulator: Any) -> Actions:
    """What every simulated line device takes on standard input."""
    return {
        "unplug": ("pull the cable", simulator.unplug),
        "replug": ("put the cable back", simulator.replug),
        "silence": (
            "the device stops talking (silence off: talks again)",
            lambda on="on": simulator.silence(on != "off"),
        ),
        "noise": ("put garbage bytes on the line", lambda: simulator.inject(b"\x00\xff#~noise~#\r\n")),
    }


def _shoe_actions(simulator: ShoeSimulator) -> Actions:
    return {
        "draw": ("the dealer draws a card", simulator.draw),
        "noread": ("the next card is not read", simulator.force_noread),
        "rescan": ("the dealer passes the unread card again", simulator.rescan),
        "fault": ("FAULT <code> (e.g. fault COVER_OPEN)", lambda code="FAULT": simulator.fault(code)),
        "clear": ("the fault is cleared", simulator.clear_fault),
    }


async def _shoe_auto_deal(simulator: ShoeSimulator, period: float, settings: SimulatorSettings) -> None:
    """A dealer who draws a card every `period` seconds whenever the gate is open; a new shoe when empty."""
    shoe = 0
    while True:
        await asyncio.sleep(period)
        if simulator.remaining == 0:
            shoe += 1
            simulator.load_new_deck(settings.seed + shoe, settings.decks, DEFAULT_CUT_POSITION)
            log.info("a new shoe (%d decks)", settings.decks)
            continue
        simulator.draw()


def _wheel_actions(simulator: WheelSimulator) -> Actions:
    """The wheel's one-shot faults (each for the coming game), and the technician's repair."""
    wheel = simulator.device
    return {
        "failed-launch": (
            "the next launch fails for <seconds> (flag 8 in state 2), then the ball goes",
            lambda seconds=None: wheel.fail_next_launch(None if seconds is None else float(seconds)),
        ),
        "rim-flag": (
            "flag 8 shows for the first <seconds> of the next state 3 (a false trigger under 3 s)",
            lambda seconds=None: wheel.flag_launch_in_rim_next(None if seconds is None else float(seconds)),
        ),
        "miss-spin": ("the next spin is a miss-spin (state 3 + flag 2, until *R)", wheel.miss_spin_next),
        "lose-ball": ("the next ball is not detected (state 4 + flag 1, until *R)", wheel.lose_ball_next),
        "sensor-fault": (
            "a sensor fault in the next game: flag 4, then a power-down",
            wheel.sensor_fault_next,
        ),
        "error": (
            "`*F <code>` in the next game (e.g. error 21), then a power-down",
            lambda code="21": wheel.error_code_next(int(code)),
        ),
        "power-down": ("a silent power-down in the middle of the next game", wheel.power_down_next),
        "mismatch": ("the next single line names another pocket than the status", wheel.mismatch_next),
        "stuck-spin": ("the spin counter does not advance for the next game", wheel.stick_spin_next),
        "repair": ("a technician fixes the latched fault: the wheel can be powered up again", wheel.repair),
    }


def _shuffler_actions(simulator: ShufflerSimulator) -> Actions:
    return {
        "load": ("load <decks> decks (default 8)", lambda decks="8": simulator.load_decks(int(decks))),
        "take": ("the dealer takes the shuffled cards", simulator.take_output),
        "jam": ("the next shuffle jams", simulator.jam_next),
        "open": ("open the door", simulator.open_door),
        "close": ("close the door", simulator.close_door),
    }


def _shaker_actions(simulator: ShakerSimulator) -> Actions:
    return {
        "open": ("open the dome", simulator.open_dome),
        "close": ("close the dome", simulator.close_dome),
        "motor": ("the motor fails at the next shake", simulator.motor_fault_next),
        "fault": ("FAULT <code>", lambda code="M01": simulator.fault(code)),
        "clear": ("the fault is cleared", simulator.clear_fault),
    }


#: the line devices `tablectl simulate` serves: their simulators, made from the command's settings
_SIMULATED_SHOE = Simulated(
    "shoe",
    ShoeFaults,
    lambda s: ShoeSimulator(decks=s.decks, seed=s.seed, faults=s.faults, cut_position=s.cut_position),
    _shoe_actions,
    demo_faults=lambda seed: ShoeFaults(noread_rate=0.05, noise_rate=0.02, bad_checksum_rate=0.02, seed=seed),
    auto_deal=_shoe_auto_deal,
)
_SIMULATED_WHEEL = Simulated(
    "wheel",
    WheelFaults,
    lambda s: WheelSimulator(seed=s.seed, speed=s.speed, faults=s.faults),
    _wheel_actions,
)
_SIMULATED_SHUFFLER = Simulated(
    "shuffler",
    ShufflerFaults,
    lambda s: ShufflerSimulator(speed=s.speed, faults=s.faults),
    _shuffler_actions,
    demo_speed=8.0,  # a one-deck shuffle takes (4 s + 6 s) / 8, about a second
)
_SIMULATED_SHAKER = Simulated(
    "shaker",
    ShakerFaults,
    lambda s: ShakerSimulator(speed=s.speed, seed=s.seed, faults=s.faults),
    _shaker_actions,
    demo_faults=lambda seed: ShakerFaults(noise_rate=0.02, bad_checksum_rate=0.02, seed=seed),
    demo_speed=2.0,
)

SHOE = Protocol("shoe-line", ShoeSession, ShoeSimulator, simulated=_SIMULATED_SHOE)
WHEEL = Protocol("cammegh-ss2", WheelSession, WheelSimulator, simulated=_SIMULATED_WHEEL)
SHUFFLER = Protocol("shuffler-line", ShufflerSession, ShufflerSimulator, simulated=_SIMULATED_SHUFFLER)
SHAKER = Protocol("shaker-line", ShakerSession, ShakerSimulator, simulated=_SIMULATED_SHAKER)
#: a USB HID barcode scanner: a byte session like the others, its link opened with pyusb; its simulator is a
#: USB device for the tests, not served on a pty
HID_BARCODE = Protocol("hid-barcode", HidBarcodeSession, SimulatedScanner, open_link=open_usb_hid, usb=True)


@functools.cache
def _camera() -> Protocol:
    """The camera's record: its options and simulated source, with OpenCV and numpy (the camera extra)."""
    try:
        import cv2  # noqa: F401 - the sources and the dice reader need it; a missing one is said here, once
        import numpy  # noqa: F401

        from drivers.camera.options import CameraOptions
        from drivers.camera.sources import SyntheticSource
        from drivers.dice.synthetic import DiceRenderer
    except ImportError as exc:
        if exc.name in ("cv2", "numpy"):
            raise MissingExtra(CAMERA_NEEDS) from None
        raise
    return Protocol(
        "camera",
        None,
        SyntheticSource,
        options=CameraOptions,
        open_link=None,
        # rounds of three dice rolling and coming to rest (sic bo's camera without a camera)
        renderers={"dice": DiceRenderer},
    )


#: name -> its record, or the function that loads it (a camera's, which imports OpenCV)
_PROTOCOLS: Mapping[str, Protocol | Callable[[], Protocol]] = {
    **{p.name: p for p in (SHOE, WHEEL, SHUFFLER, SHAKER, HID_BARCODE)},
    "camera": _camera,
}
#: the protocols a device may name
PROTOCOLS = frozenset(_PROTOCOLS)
#: protocols whose devices are cameras (frames), not byte streams
CAMERA_PROTOCOLS = frozenset({"camera"})
#: `tablectl simulate <device>`: device -> its protocol's record
SIMULATED: Mapping[str, Protocol] = {
    p.simulated.device: p for p in _PROTOCOLS.values() if isinstance(p, Protocol) and p.simulated is not None
}


class UnknownProtocol(KeyError):
    def __str__(self) -> str:
        return f"unknown protocol {self.args[0]!r}; known: {', '.join(sorted(PROTOCOLS))}"


def protocol(name: str) -> Protocol:
    """The record of a protocol (a camera's raises MissingExtra without OpenCV)."""
    try:
        entry = _PROTOCOLS[name]
    except KeyError:
        raise UnknownProtocol(name) from None
    return entry if isinstance(entry, Protocol) else entry()


def is_camera(protocol: str) -> bool:
    return protocol in CAMERA_PROTOCOLS


def is_usb(name: str) -> bool:
    """Its `port` is a USB address (`usb:VVVV:PPPP[:SERIAL]`), opened with pyusb."""
    entry = _PROTOCOLS.get(name)
    return isinstance(entry, Protocol) and entry.usb


def link_opener(name: str) -> Any:
    """How a runner opens this protocol's link (`drivers.transport.open_serial` for a serial port or URL)."""
    return protocol(name).open_link


def session_class(name: str) -> type[DeviceSession]:
    if is_camera(name):
        raise ValueError(f"a {name} device has no byte session: it is run by drivers.camera")
    session = protocol(name).session
    assert session is not None
    return session


def options_model(name: str) -> type[BaseModel]:
    """The model of `[devices.<name>.options]` for a protocol: its session class's `Options` (a camera's:
    `CameraOptions`)."""
    return protocol(name).options


def simulator_class(name: str) -> Any:
    return protocol(name).simulator
