"""What the tests of `test_table_parts`, split by kind, share: `tests/integration/test_table_parts.py`,
`tests/e2e/test_table_parts.py`."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]
