"""What the tests of `test_broker_credentials`, split by kind, share:
`tests/unit/core/test_broker_credentials.py`, `tests/e2e/test_broker_credentials.py`."""

from __future__ import annotations

SECRET = "s3cr3t-Pa55"
