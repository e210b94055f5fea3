"""Device drivers: sans-IO protocols, transports, simulators.

Data flows one way: bytes -> protocol message -> Reading (see `drivers.readings`).
Nothing in this package knows about games, MQTT or the journal.
"""
