"""The simulated Cammegh SS2 wheel with every fault it can inject, as the long roulette session test
(`tests/unit/games/roulette/test_roulette_long_session.py`) and the replay benchmark (`bench/replay_speed.py`)
run it: on a virtual clock starting at `T0`, stepped every `STEP` seconds, faults at `FAULTS`' rates (every
kind often enough to occur many times in an hour of play)."""

from __future__ import annotations

from drivers.wheel.simulator import WheelFaults

#: the virtual clock's start (a Unix time in 2026)
T0 = 1_790_000_000.0
#: the virtual clock's step: the host session's poll interval
STEP = 0.05
FAULTS = WheelFaults(
    failed_launch_rate=0.05,
    launch_flag_in_rim_rate=0.05,
    miss_spin_rate=0.06,
    lost_ball_rate=0.05,
    sensor_fault_rate=0.02,
    error_code_rate=0.02,
    power_down_rate=0.02,
    mismatch_rate=0.03,
    noise_rate=0.02,
    stuck_spin_rate=0.2,
)
