"""The table machine, pure: a shoe and its shuffler through one core, their deadlines merged.

What the live service and the replay both rely on: the bytes for a device are handed out only while its link
is up (and only once the step is journaled, which is the driver's part); a core request to a device with a
session is that session's bytes in the same step; acknowledged messages name their keys; the earliest
deadline of the core and the sessions is handled first, at its own time; and the captures of every device of
a table replay to the very events the machine gave when it was fed them live.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.config import TableConfig
from controller.machine import MachineStep, TableMachine
from controller.replay import replay_table
from controller.table_build import TABLE_CONFIGS, build_core, build_session
from drivers.capture import CaptureRecord
from drivers.line.framing import encode_line
from drivers.line.session import WATCHDOG_S

pytestmark = pytest.mark.unit

T0 = 1_700_000_000.0


def config() -> TableConfig:
    return TABLE_CONFIGS.from_dict(
        {
            "table": {"studio_id": "s1", "table_id": "ab1", "game": "andar_bahar"},
            "broker": {"url": "mqtt://127.0.0.1:9"},
            "devices": {
                "shoe": {"protocol": "shoe-line", "port": "/dev/null"},
                "shuffler": {"protocol": "shuffler-line", "port": "/dev/null"},
            },
            "game": {"shuffler_device": "shuffler", "betting_seconds": 1.0, "round_gap_seconds": 0.5},
        },
        environ={},
    )


def machine(table: TableConfig) -> TableMachine:
    sessions = {name: build_session(name, d.protocol, d.options) for name, d in table.devices.items()}
    return TableMachine(build_core(table), sessions, now=T0)


def types(steps: list[MachineStep]) -> list[str]:
    return [event.type for step in steps for event in step.events]


class Live:
    """Drives a machine as the service does (every deadline due before an input first), and keeps what each
    device sent as its capture would."""

    def __init__(self) -> None:
        self.table = config()
        self.machine = machine(self.table)
        self.steps: list[MachineStep] = []
        self.captures: dict[str, list[CaptureRecord]] = {"shoe": [], "shuffler": []}

    def until(self, now: float) -> None:
        while (step := self.machine.tick(now)) is not None:
            self.steps.append(step)

    def opened(self, device: str, now: float) -> MachineStep:
        self.until(now)
        self.captures[device].append(CaptureRecord(t=now, direction="link", data=b"", info={"event": "open"}))
        self.steps.append(self.machine.link_opened(device, now))
        return self.steps[-1]

    def line(self, device: str, body: str, now: float) -> MachineStep:
        self.until(now)
        data = encode_line(body)
        self.captures[device].append(CaptureRecord(t=now, direction="rx", data=data))
        self.steps.append(self.machine.feed(device, data, now))
        return self.steps[-1]


def test_bytes_go_to_connected_devices_and_a_core_request_is_its_sessions_bytes_in_the_same_step() -> None:
    live = Live()
    opened = live.opened("shoe", T0)
    assert opened.writes == {"shoe": encode_line("STATUS?")}  # the shuffler's link is not up: nothing for it
    live.line("shoe", "HELLO SIMSHOE 1.0.0 SIM0001", T0 + 0.1)
    # the shoe's watchdog is the only deadline: the table waits for the shuffler to come online
    assert live.machine.next_deadline() == T0 + 0.1 + WATCHDOG_S
    live.opened("shuffler", T0 + 0.2)
    online = live.line("shuffler", "HELLO SIMSHUF 1.0.0 SIM0002", T0 + 0.3)
    assert [type(r).__name__ for r in online.readings] == ["DeviceOnline"]
    assert online.devices_changed == {"shuffler"}
    # every device is ready: the core's deadline (start the table: due at once) comes before any watchdog
    deadline = live.machine.next_deadline()
    assert deadline is not None and deadline <= T0 + 0.3
    started = live.machine.tick(T0 + 0.3)
    assert started is not None and types([started]) == ["shuffle.started"]
    shuffle_id = started.events[0].data["shuffle_id"]
    assert started.writes == {"shuffler": encode_line(f"SHUFFLE {shuffle_id} 1")}
    assert live.machine.tick(T0 + 0.3) is None


def test_a_message_the_device_repeats_names_its_key_once_and_its_ack_waits_in_the_step() -> None:
    live = Live()
    live.opened("shuffler", T0)
    live.line("shuffler", "HELLO SIMSHUF 1.0.0 SIM0002", T0 + 0.1)
    done = live.line("shuffler", "DONE 0001 nobody-asked 1 52", T0 + 0.2)
    line = encode_line("DONE 0001 nobody-asked 1 52").rstrip(b"\r\n").decode()
    assert done.delivered == [line]
    assert done.writes == {"shuffler": encode_line("ACK 0001")}
    again = live.line("shuffler", "DONE 0001 nobody-asked 1 52", T0 + 0.3)  # its ACK was lost: a repeat
    assert again.readings == [] and again.delivered == [] and not again.applied
    assert again.writes == {"shuffler": encode_line("ACK 0001")}


def play(live: Live) -> str:
    """A shoe and a shuffler: the table asks for a shuffle, the shuffler delivers it."""
    live.opened("shoe", T0)
    live.opened("shuffler", T0)
    live.line("shoe", "HELLO SIMSHOE 1.0.0 SIM0001", T0 + 0.1)
    live.line("shuffler", "HELLO SIMSHUF 1.0.0 SIM0002", T0 + 0.1)
    live.until(T0 + 0.2)
    (started,) = data_of(live.steps, "shuffle.started")
    shuffle_id: str = started["shuffle_id"]
    live.line("shuffler", "STATE SHUFFLING", T0 + 0.5)
    live.line("shoe", "HB 1", T0 + 1.0)
    live.line("shuffler", f"DONE 0001 {shuffle_id} 1 52", T0 + 1.5)
    live.line("shuffler", "STATE READY", T0 + 1.6)
    live.line("shoe", "HB 2", T0 + 2.0)
    live.line("shuffler", "HB 2", T0 + 2.0)
    for second in range(3, 7):
        live.line("shoe", f"HB {second}", T0 + second)
        live.line("shuffler", f"HB {second}", T0 + second)
    live.until(T0 + 6.5)
    return shuffle_id


def test_the_captures_of_a_shoe_and_its_shuffler_replay_to_what_the_machine_gave_live() -> None:
    live = Live()
    play(live)
    lived = types(live.steps)
    assert lived == ["device.online", "device.online", "shuffle.started", "shuffle.done"]
    replayed = [(e.type, e.data) for e in replay_table(live.table, live.captures)]
    assert replayed == [(e.type, e.data) for step in live.steps for e in step.events]


def data_of(steps: list[MachineStep], kind: str) -> list[Any]:
    return [e.data for step in steps for e in step.events if e.type == kind]
