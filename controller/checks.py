"""`tablectl check-config`: everything a table's file needs to start, checked at once, every problem listed.

Beyond what loading the config validates (keys, values, the game's settings, each protocol's options):
every device's session can be built from its options, every serial port exists (a `socket://` or
`rfc2217://` URL is only checked for its form: the device server may be down right now), and the data
directory and capture files can be written (or created). Nothing is created or opened for writing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from controller.config import ConfigError, TableConfig, merged_config_file
from controller.table_build import TABLE_CONFIGS
from drivers.registry import is_camera, is_usb, session_class
from drivers.url_redaction import redact_url

#: pyserial URL schemes (`serial_for_url`); the network ones need `host:port`.
_NETWORK_SCHEMES = frozenset({"socket", "rfc2217"})
_OTHER_SCHEMES = frozenset({"loop", "spy", "alt", "hwgrep", "cp2110"})


def port_problem(port: str) -> str | None:
    """Why a device's `port` cannot be opened, as far as can be told without opening it; None if fine."""
    if "://" not in port:
        if not os.path.exists(port):
            return f"serial port {port} not found (is the device plugged in? check `ls /dev/serial/by-id/`)"
        return None
    # the URL is named redacted, never by urllib's own errors: it may hold a password
    shown = redact_url(port)
    try:
        parts = urlsplit(port)
    except ValueError:
        return f"{shown} is not a valid URL"
    if parts.scheme in _OTHER_SCHEMES:
        return None
    if parts.scheme not in _NETWORK_SCHEMES:
        known = ", ".join(f"{scheme}://" for scheme in sorted(_NETWORK_SCHEMES | _OTHER_SCHEMES))
        return f"{shown}: unknown URL scheme {parts.scheme + '://'!r} (use a device path, or one of {known})"
    try:
        number = parts.port
    except ValueError:
        number = None
    if not parts.hostname or number is None or number == 0:
        return (
            f"{shown}: a {parts.scheme}:// URL needs a host and a port, e.g. {parts.scheme}://10.0.0.5:4001"
        )
    return None


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def directory_problem(path: Path) -> str | None:
    """Why files cannot be written in directory `path` (created if missing); None if they can."""
    if path.exists():
        if not path.is_dir():
            return f"{path} is not a directory"
        if not os.access(path, os.W_OK | os.X_OK):
            return f"{path} is not writable by this user"
        return None
    existing = _nearest_existing(path.parent)
    if not existing.is_dir():
        return f"{path} cannot be created: {existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{path} cannot be created: {existing} is not writable by this user"
    return None


def file_problem(path: Path) -> str | None:
    """Why file `path` cannot be written (or created, with its directory); None if it can."""
    if path.exists():
        if path.is_dir():
            return f"{path} is a directory, not a file"
        if not os.access(path, os.W_OK):
            return f"{path} is not writable by this user"
        return None
    return directory_problem(path.parent)


def camera_source_problem(source: str) -> str | None:
    """A camera's `port` is its frame source: a local device or folder must exist; a stream URL, a
    GStreamer pipeline or `synthetic` can only be tried by opening it."""
    text = source.strip()
    if text.startswith("folder:"):
        folder = text.removeprefix("folder:")
        return None if os.path.isdir(folder) else f"image folder {folder} not found"
    if text.startswith("/dev/") and not os.path.exists(text):
        return f"camera {text} not found (is it plugged in? check `ls /dev/v4l/by-id/`)"
    return None


def runtime_problems(config: TableConfig) -> list[str]:
    """What would stop a valid config from starting, as `<key>: <what>` lines."""
    problems: list[str] = []
    for name, device in config.devices.items():
        if is_camera(device.protocol):
            problem = camera_source_problem(device.port)
            if problem is not None:
                problems.append(f"devices.{name}.port: {problem}")
            continue
        try:
            session_class(device.protocol)(name, **device.options)
        except (TypeError, ValueError) as exc:
            problems.append(f"devices.{name}.options: the {device.protocol} session refuses them: {exc}")
        if is_usb(device.protocol):
            from drivers.hid.usb import usb_address_problem

            problem = usb_address_problem(device.port)
        else:
            problem = port_problem(device.port)
        if problem is not None:
            problems.append(f"devices.{name}.port: {problem}")
        if device.capture is not None:
            problem = file_problem(device.capture)
            if problem is not None:
                problems.append(f"devices.{name}.capture: {problem}")
    problem = directory_problem(config.table.data_dir)
    if problem is not None:
        problems.append(f"table.data_dir: {problem}")
    return problems


def unvalidated_problems(merged: Mapping[str, Any]) -> list[str]:
    """The port and file checks that can run on a file that does not validate: each device entry whose
    `port` (and `capture`) can be read, and the data directory, checked as `runtime_problems` would."""
    problems: list[str] = []
    devices = merged.get("devices")
    for name, device in devices.items() if isinstance(devices, Mapping) else ():
        if not isinstance(device, Mapping):
            continue
        port, protocol = device.get("port"), device.get("protocol")
        if isinstance(port, str) and isinstance(protocol, str):
            # an unknown protocol is the schema's problem: its port is still checked as a serial port
            camera, usb = is_camera(protocol), is_usb(protocol)
            if camera:
                problem = camera_source_problem(port)
            elif usb:
                from drivers.hid.usb import usb_address_problem

                problem = usb_address_problem(port)
            else:
                problem = port_problem(port)
            if problem is not None:
                problems.append(f"devices.{name}.port: {problem}")
        capture = device.get("capture")
        if isinstance(capture, str) and capture:
            problem = file_problem(Path(capture))
            if problem is not None:
                problems.append(f"devices.{name}.capture: {problem}")
    table = merged.get("table")
    data_dir = table.get("data_dir") if isinstance(table, Mapping) else None
    if isinstance(data_dir, str) and data_dir:
        problem = directory_problem(Path(data_dir))
        if problem is not None:
            problems.append(f"table.data_dir: {problem}")
    return problems


def check_config(path: str | Path, *, environ: Mapping[str, str] | None = None) -> list[str]:
    """Every problem of a table's file, one line each (`<file>: <key>: <what>`); empty when it is ready.

    One pass: a schema error in one section does not hide another section's errors, nor the ports and
    files that can be checked beside them."""
    config, problems = TABLE_CONFIGS.problems(path, environ=environ)
    if config is not None:
        return [f"{path}: {line}" for line in runtime_problems(config)]
    try:
        merged = merged_config_file(path, environ=environ)
    except ConfigError:
        return problems  # the file itself cannot be read: that is the one problem
    return problems + [
        f"{path}: {line}" for line in unvalidated_problems(merged) if f"{path}: {line}" not in problems
    ]
