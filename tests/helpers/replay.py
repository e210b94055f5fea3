"""What the tests of `test_replay`, split by kind, share: `tests/unit/games/baccarat/test_replay.py`,
`tests/integration/test_replay.py`."""

from __future__ import annotations

from drivers.shoe.simulator import ShoeFaults

FAULTS = ShoeFaults(noread_rate=0.04, bad_checksum_rate=0.05, noise_rate=0.05, duplicate_rate=0.05)
