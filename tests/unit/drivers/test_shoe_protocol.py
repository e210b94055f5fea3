"""The shoe-line message table, what only the shoe has: its card codes, and every card round-trips.

The table itself (every message parsed, encoded back, malformed ones refused, host messages, parsers that
never raise) is checked with the other line devices' in `test_line_devices.py`."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.line.framing import parse_frame
from drivers.shoe.protocol import (
    RANKS,
    SUITS,
    Card,
    is_card_code,
    parse_device_message,
)

pytestmark = pytest.mark.unit


def test_card_codes() -> None:
    valid = {rank + suit for rank in RANKS for suit in SUITS}
    assert len(valid) == 52
    assert all(is_card_code(code) for code in valid)
    assert not any(is_card_code(code) for code in ["", "A", "ASX", "1S", "AX", "as", "10H", "TS "])


@settings(max_examples=200, deadline=None)
@given(seq=st.integers(0, 9999), rank=st.sampled_from(RANKS), suit=st.sampled_from(SUITS))
def test_every_card_round_trips(seq: int, rank: str, suit: str) -> None:
    line = Card(seq, rank + suit).encode()
    body = parse_frame(line.rstrip(b"\r\n"))
    assert isinstance(body, str)
    assert parse_device_message(body) == Card(seq, rank + suit)
