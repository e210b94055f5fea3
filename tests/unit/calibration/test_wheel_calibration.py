"""Wheel calibration, its pure parts: the JSON records are versioned and never overwritten; the CLI
refuses a missing port and is registered under `tablectl calibrate`.

Its unit tests; the integration ones are in `tests/integration/test_wheel_calibration.py`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from calibration.wheel import (
    SCHEMA,
    SCHEMA_VERSION,
    WheelIdentity,
    write_record,
)
from calibration.wheel_cli import EXIT_USAGE
from tests.helpers.wheel_calibration import run_cli

pytestmark = pytest.mark.unit


# --- records ------------------------------------------------------------------------------------------------


def test_records_are_versioned_and_never_overwritten(tmp_path: Path) -> None:
    identity = WheelIdentity(name="CAM", firmware={"S": "2.52"})
    when = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
    first = write_record(
        tmp_path, "wheel-sensors", port="/dev/ttyS0", identity=identity, ok=True, result={"n": 1}, now=when
    )
    second = write_record(
        tmp_path, "wheel-sensors", port="/dev/ttyS0", identity=identity, ok=False, result={"n": 2}, now=when
    )
    assert first != second
    assert first.name == "wheel-sensors-20240501T120000000000Z.json"
    assert second.name == "wheel-sensors-20240501T120000000000Z-2.json"
    assert json.loads(first.read_text()) == {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "kind": "wheel-sensors",
        "created_at": "2024-05-01T12:00:00Z",
        "port": "/dev/ttyS0",
        "wheel": {"identity": "CAM", "firmware": {"S": "2.52"}},
        "ok": True,
        "result": {"n": 1},
    }
    assert json.loads(second.read_text())["result"] == {"n": 2}


async def test_cli_missing_port(tmp_path: Path) -> None:
    missing = tmp_path / "ttyUSB9"
    code, shown = await run_cli(["wheel-selftest", "--port", str(missing), "--out", str(tmp_path)])
    assert code == EXIT_USAGE
    assert shown == [f"tablectl: error: serial port {missing} not found (is the device plugged in?)"]


def test_cli_is_registered_under_tablectl_calibrate() -> None:
    from controller.cli import build_parser

    args = build_parser().parse_args(["calibrate", "wheel-firing", "check", "--port", "/dev/ttyS0"])
    assert args.firing_action == "check" and args.port == "/dev/ttyS0" and args.baudrate == 9600
    assert args.out == "calibration-records"
