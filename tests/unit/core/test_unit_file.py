"""What ships for udev: the rules give only the table's devices, by serial number, to the service.

Its unit tests; the integration ones are in `tests/integration/test_unit_file.py`."""

from __future__ import annotations

import re

import pytest

from tests.helpers.paths import REPO

pytestmark = pytest.mark.unit
RULES = REPO / "systemd" / "70-tablectl.rules"


def test_udev_rules_give_only_the_tables_devices_by_serial_number_to_the_service() -> None:
    rules = [line for line in RULES.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert len(rules) >= 6
    for rule in rules:
        assert re.search(r'ATTRS?\{serial\}=="[^"]+"', rule), rule
        assert 'GROUP="tablectl"' in rule and 'MODE="0660"' in rule, rule
        assert "dialout" not in rule and "plugdev" not in rule and 'video"' not in rule, rule
