"""The ACK a card shoe receives is a promise: the card is in the journal. Here, the shoe session alone: after
a restart it acknowledges the repeat of a card the journal already holds, without reading it again.

Its unit tests; the integration ones are in `tests/integration/test_ack_promise.py`, the e2e ones in
`tests/e2e/test_ack_promise.py`."""

from __future__ import annotations

import pytest

from drivers.shoe.protocol import Ack, Card, Hello, State
from drivers.shoe.session import ShoeSession

pytestmark = pytest.mark.unit


def test_a_restarted_shoe_session_acks_the_repeat_of_a_journaled_card_without_reading_it_again() -> None:
    card, state = Card(5, "9S").encode(), State("READY").encode()
    session = ShoeSession("shoe")
    session.delivered_before(card.decode().strip())
    session.delivered_before(state.decode().strip())  # a message without seq: nothing to remember
    session.connection_made(0.0)
    session.data_to_send()
    readings = session.data_received(Hello("SIMSHOE", "1.0.0", "SIM0001").encode() + card, 0.1)
    assert [type(r).__name__ for r in readings] == ["DeviceOnline"]
    assert session.data_to_send() == Ack(5).encode()  # acknowledged: the shoe stops repeating it
    assert session.stats.duplicates == 1
    readings = session.data_received(Card(6, "8D").encode(), 0.2)
    assert [getattr(r, "code", None) for r in readings] == ["8D"]
