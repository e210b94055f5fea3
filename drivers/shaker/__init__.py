"""`shaker-line`: the reference dice-shaker line protocol (docs/devices.md).

- `drivers.shaker.protocol`: the message table, sans-IO parse/encode (frozen dataclasses).
- `drivers.shaker.session`: `ShakerSession`, the host side (readings DiceAtRest once per cycle despite
  retransmissions, DeviceStatus, DeviceFault for M01..M04 and STATE FAULT).
- `drivers.shaker.simulator`: `ShakerDevice` (pure core) and `ShakerSimulator` (served on a pty/TCP).
"""
