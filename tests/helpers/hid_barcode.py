"""What the tests of `test_hid_barcode`, split by kind, share: `tests/unit/drivers/test_hid_barcode.py`,
`tests/integration/test_hid_barcode.py`."""

from __future__ import annotations

from drivers.readings import CardSeen, Reading


def seen(readings: list[Reading]) -> list[str]:
    return [r.code for r in readings if isinstance(r, CardSeen)]
