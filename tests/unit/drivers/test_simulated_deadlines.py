"""A simulated line device says when it is next due (`next_deadline`), so that its port sleeps until then
instead of waking 100 times a second: whatever the device does, a poll before its deadline has nothing to
send. Checked over random sequences of draws, ACKs, faults and pauses, polling every 10 ms."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.testing.line_wire import bodies, frame
from drivers.line.device import HEARTBEAT_S, RETRANSMIT_S
from drivers.shoe.simulator import ShoeDevice

pytestmark = pytest.mark.unit

STEP = 0.01


def test_the_deadlines_of_a_quiet_shoe() -> None:
    device = ShoeDevice(cards=["AS", "2S"])
    assert device.next_deadline() is None  # not powered up
    device.connected(100.0)
    assert device.next_deadline() == 0.0  # its HELLO goes at once
    assert bodies(device.poll(100.0))[0].startswith("HELLO")
    assert device.next_deadline() == 100.0 + HEARTBEAT_S  # nothing but the heartbeat
    device.draw(100.2)
    assert device.next_deadline() == 100.2  # a card to send
    assert bodies(device.poll(100.2))[0].startswith("CARD")
    assert device.next_deadline() == pytest.approx(100.2 + RETRANSMIT_S)  # sent again unless ACKed


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["draw", "ack", "fault", "clear", "wait"]), st.integers(1, 120)),
        min_size=1,
        max_size=25,
    )
)
def test_a_poll_before_the_deadline_never_has_anything_to_send(steps: list[tuple[str, int]]) -> None:
    device = ShoeDevice(decks=1, seed=3)
    now = 50.0
    device.connected(now)
    sent: list[str] = []
    for action, wait in steps:
        if action == "draw":
            device.draw(now)
        elif action == "ack" and device.awaiting_ack is not None:
            device.receive(frame(f"ACK {device.awaiting_ack:04d}"), now)
        elif action == "fault":
            device.fault("F03")
        elif action == "clear":
            device.clear_fault()
        for _ in range(wait):
            due = device.next_deadline()
            out = device.poll(now)
            if out:
                assert due is not None and due <= now + 1e-9, (due, now, out)
                sent += bodies(out)
            now += STEP
    assert sent and sent[0].startswith("HELLO")
