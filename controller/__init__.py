"""tablectl controller: game flows, table runtime, journal, MQTT bus, panel, config and CLI."""

__version__ = "0.1.0"
