"""The single-deck card games' demo, its pure part: a simulated shoe takes a new pack and deals it from the
top.

Its unit tests; the e2e ones are in `tests/e2e/test_demo_more_games.py`."""

from __future__ import annotations

import pytest

from drivers.shoe.simulator import ShoeDevice, shuffled_shoe

pytestmark = pytest.mark.unit


def test_a_simulated_shoe_takes_a_new_pack_and_deals_it_from_the_top() -> None:
    device = ShoeDevice(cards=["AS", "KD"], cut_position=None)
    assert device.draw(0.0) and device.draw(0.0)
    assert device.state == "EMPTY" and not device.draw(0.0)
    device.load(["2C", "3C", "4C"])
    assert (device.remaining, device.state, device.cut_index) == (3, "READY", None)
    assert device.draw(0.0) and device.cards[device.position - 1] == "2C"
    device.load(shuffled_shoe(1, seed=5), cut_position=16)
    assert (device.remaining, device.cut_index) == (52, 36)
    assert sorted(device.cards) == sorted(shuffled_shoe(1, seed=6))  # one whole deck, in another order
    with pytest.raises(ValueError, match="one printable ASCII word"):
        device.load(["A S"])
