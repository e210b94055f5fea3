"""The device registry's records: what `tablectl simulate` and the demo read, instead of a kind."""

from __future__ import annotations

import dataclasses

import pytest

from drivers.registry import PROTOCOLS, SIMULATED, SimulatorSettings, is_camera, protocol
from drivers.simulate import actions, parse_faults
from drivers.wheel.simulator import WheelSimulator

pytestmark = pytest.mark.unit


def test_each_byte_protocol_names_its_session_options_and_simulator() -> None:
    for name in sorted(PROTOCOLS):
        if is_camera(name):
            continue
        record = protocol(name)
        assert record.name == name and record.session is not None
        assert record.options is record.session.Options
        assert isinstance(record.simulator, type)


def test_simulate_serves_each_simulated_protocol_with_its_fault_switches() -> None:
    assert sorted(SIMULATED) == ["shaker", "shoe", "shuffler", "wheel"]
    for device, record in SIMULATED.items():
        assert record.simulated is not None
        faults = parse_faults(device, None, seed=3)
        assert isinstance(faults, record.simulated.faults)
        simulator = record.simulated.make(SimulatorSettings(seed=3, faults=faults))
        assert isinstance(simulator, record.simulator)
        assert {"unplug", "replug", "silence", "noise"} <= set(actions(device, simulator))


#: each one-shot fault of the wheel, reachable on `tablectl simulate wheel`'s standard input
WHEEL_ACTIONS = {
    "failed-launch": ("failed_launch", ["6"], 6.0),
    "rim-flag": ("launch_flag_in_rim", [], 2.0),
    "miss-spin": ("miss_spin", [], True),
    "lose-ball": ("lost_ball", [], True),
    "sensor-fault": ("sensor_fault", [], True),
    "error": ("error_code", ["22"], 22),
    "power-down": ("power_down", [], True),
    "mismatch": ("mismatch", [], True),
    "stuck-spin": ("stuck_spin", [], True),
}


@pytest.mark.parametrize("action", sorted(WHEEL_ACTIONS))
def test_every_one_shot_wheel_fault_is_a_simulate_action(action: str) -> None:
    simulator = WheelSimulator(seed=1)
    pending, args, expected = WHEEL_ACTIONS[action]
    assert getattr(simulator.device._pending, pending) in (None, False)
    actions("wheel", simulator)[action][1](*args)
    assert getattr(simulator.device._pending, pending) == expected


def test_the_wheel_action_list_covers_every_one_shot_fault() -> None:
    from drivers.wheel.simulator import _Pending

    assert {pending for pending, _, _ in WHEEL_ACTIONS.values()} == {
        f.name for f in dataclasses.fields(_Pending)
    }
    simulator = WheelSimulator(seed=1)
    simulator.device.latched_fault = True
    actions("wheel", simulator)["repair"][1]()
    assert not simulator.device.latched_fault
