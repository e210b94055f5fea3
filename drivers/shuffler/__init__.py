"""`shuffler-line`: the reference card-shuffler line protocol (docs/devices.md).

- `drivers.shuffler.protocol`: the message table, sans-IO parse/encode (frozen dataclasses).
- `drivers.shuffler.session`: `ShufflerSession`, the host side (readings ShuffleDone / ShuffleFailed /
  DeviceStatus / DeviceFault; a count that is not decks x 52 is a failure, never a usable deck).
- `drivers.shuffler.simulator`: `ShufflerDevice` (pure core) and `ShufflerSimulator` (served on a pty/TCP).
"""
