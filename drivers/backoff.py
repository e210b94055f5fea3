"""Exponential backoff for reconnecting to a device: the delay doubles after each failure, up to a cap."""

from __future__ import annotations


class Backoff:
    """`next()` is the delay before the next attempt; `reset()` after a connection that worked."""

    def __init__(self, minimum: float, maximum: float) -> None:
        if minimum <= 0 or maximum < minimum:
            raise ValueError(f"backoff needs 0 < minimum <= maximum, got {minimum} and {maximum}")
        self.minimum = minimum
        self.maximum = maximum
        self._delay = minimum

    def next(self) -> float:
        delay = self._delay
        self._delay = min(self._delay * 2, self.maximum)
        return delay

    def reset(self) -> None:
        self._delay = self.minimum
