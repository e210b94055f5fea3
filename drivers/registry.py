"""Protocol registry: config says `protocol = "shoe-line"`, this finds the session and simulator classes.

A vendor's real protocol is one more entry here (like python-can's interface registry). Imports are lazy so
that a table running a shoe never imports OpenCV or the wheel code.

Two kinds of device: byte streams (a `DeviceSession` driven by `drivers.runner`) and cameras (frames, driven
by `drivers.camera.CameraRunner`; `port` is the frame source: a device index or path, a stream URL, a
GStreamer pipeline, `folder:<dir>`, `synthetic`). Both report health with the same readings.
"""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import BaseModel

from drivers.session import DeviceSession, SessionOptions

# protocol -> (session class path, simulator class path)
PROTOCOLS: dict[str, tuple[str, str]] = {
    "shoe-line": ("drivers.shoe.session:ShoeSession", "drivers.shoe.simulator:ShoeSimulator"),
    "cammegh-ss2": ("drivers.wheel.session:WheelSession", "drivers.wheel.simulator:WheelSimulator"),
    "shuffler-line": (
        "drivers.shuffler.session:ShufflerSession",
        "drivers.shuffler.simulator:ShufflerSimulator",
    ),
    "shaker-line": ("drivers.shaker.session:ShakerSession", "drivers.shaker.simulator:ShakerSimulator"),
    # a USB HID barcode scanner: a byte session like the others, its link opened with pyusb (LINKS)
    "hid-barcode": ("drivers.hid.session:HidBarcodeSession", "drivers.hid.simulator:SimulatedScanner"),
    # a camera: (its options model, its simulated source); it has no byte session
    "camera": ("drivers.camera.options:CameraOptions", "drivers.camera.sources:SyntheticSource"),
}
#: protocols whose devices are cameras (frames), not byte streams
CAMERA_PROTOCOLS = frozenset({"camera"})


#: protocols whose link is not a serial port or URL: protocol -> the function that opens it, with the shape of
#: `drivers.transport.open_serial` (the runner takes it as `open_link`); `port` is then its address
LINKS: dict[str, str] = {"hid-barcode": "drivers.hid.usb:open_usb_hid"}


def is_camera(protocol: str) -> bool:
    return protocol in CAMERA_PROTOCOLS


def is_usb(protocol: str) -> bool:
    """Its `port` is a USB address (`usb:VVVV:PPPP[:SERIAL]`), opened with pyusb."""
    return protocol in LINKS


def link_opener(protocol: str) -> Any:
    """How a runner opens this protocol's link: `drivers.transport.open_serial` unless LINKS says."""
    path = LINKS.get(protocol)
    if path is None:
        from drivers.transport import open_serial

        return open_serial
    return _load(path)


class UnknownProtocol(KeyError):
    def __str__(self) -> str:
        return f"unknown protocol {self.args[0]!r}; known: {', '.join(sorted(PROTOCOLS))}"


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def session_class(protocol: str) -> type[DeviceSession]:
    try:
        path = PROTOCOLS[protocol][0]
    except KeyError:
        raise UnknownProtocol(protocol) from None
    if is_camera(protocol):
        raise ValueError(f"a {protocol} device has no byte session: it is run by drivers.camera")
    cls: type[DeviceSession] = _load(path)
    return cls


def options_model(protocol: str) -> type[BaseModel]:
    """The model of `[devices.<name>.options]` for a protocol: its session class's `Options` (a camera's:
    `CameraOptions`)."""
    if is_camera(protocol):
        model: type[BaseModel] = _load(PROTOCOLS[protocol][0])
        return model
    options: type[SessionOptions] = session_class(protocol).Options
    return options


def simulator_class(protocol: str) -> Any:
    try:
        path = PROTOCOLS[protocol][1]
    except KeyError:
        raise UnknownProtocol(protocol) from None
    return _load(path)
