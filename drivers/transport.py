"""Open a device link as asyncio streams: serial ports, `socket://` and `rfc2217://` URLs alike.

Everything goes through pyserial's `serial_for_url` (via pyserial-asyncio-fast), so a table config can
name `/dev/ttyACM0`, a serial-over-IP converter or a simulator's pty without the driver knowing which.
Failures become a `LinkError` whose message an operator can act on.
"""

from __future__ import annotations

import asyncio
import errno
import os
from typing import Any

import serial
import serial_asyncio_fast

from drivers.url_redaction import redact_urls_in


class LinkError(ConnectionError):
    """The device link could not be opened (or broke); the message says which port and why."""


def _is_network_url(url: str) -> bool:
    return "://" in url


def _describe_os_error(url: str, exc: OSError) -> str:
    code = exc.errno
    if _is_network_url(url):
        if isinstance(exc, ConnectionRefusedError) or code == errno.ECONNREFUSED:
            return f"cannot connect to {url}: connection refused (is the device server running?)"
        if isinstance(exc, TimeoutError) or code == errno.ETIMEDOUT:
            return f"cannot connect to {url}: timed out"
        reason = exc.strerror or str(exc) or type(exc).__name__
        return f"cannot connect to {url}: {reason}"
    if code == errno.ENOENT:
        return f"serial port {url} not found (is the device plugged in?)"
    if code in (errno.EACCES, errno.EPERM):
        return f"no permission to open serial port {url} (is the service user in the 'dialout' group?)"
    if code == errno.EBUSY:
        return f"serial port {url} is busy (another program has it open)"
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"cannot open serial port {url}: {reason}"


async def open_serial(
    url: str, baudrate: int = 115200, **serial_kwargs: Any
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open `url` (device path, `socket://host:port`, `rfc2217://host:port`) and return (reader, writer).
    A LinkError names the URL as it may be shown (`redact_urls_in`): a network URL's user info is never
    repeated, nor pyserial's own text of it."""
    shown = redact_urls_in(url)
    try:
        return await serial_asyncio_fast.open_serial_connection(url=url, baudrate=baudrate, **serial_kwargs)
    except serial.SerialException as exc:
        # pyserial wraps the OS error: SerialException(errno, "could not open port ...: [Errno 2] ...")
        if isinstance(exc.errno, int):
            raise LinkError(_describe_os_error(shown, OSError(exc.errno, os.strerror(exc.errno)))) from exc
        text = str(exc).replace(url, shown)
        if _is_network_url(url) and "refused" in text.lower():
            refused = OSError(errno.ECONNREFUSED, "connection refused")
            raise LinkError(_describe_os_error(shown, refused)) from exc
        if "could not configure port" in text.lower():
            raise LinkError(f"{shown} is not a serial port ({text})") from exc
        raise LinkError(f"cannot open {shown}: {text}") from exc
    except OSError as exc:
        raise LinkError(_describe_os_error(shown, exc)) from exc
    except ValueError as exc:
        # serial_for_url rejects unknown schemes and bad parameters with ValueError.
        raise LinkError(f"invalid device address {shown!r}: {str(exc).replace(url, shown)}") from exc
