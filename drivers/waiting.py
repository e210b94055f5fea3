"""Waiting with a time limit, without losing a cancellation.

On Python 3.11 `asyncio.wait_for(aw, timeout)` can swallow a cancellation that arrives in the same loop
iteration as `aw` completes: the task that was asked to stop carries on (a runner ticking forever after the
service's fail-stop cancelled it, a camera loop that never ended at 20 frames a second). `asyncio.wait` does
not: these helpers are built on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def with_timeout(awaitable: Awaitable[T], timeout: float | None) -> T:
    """`awaitable`'s result, or TimeoutError after `timeout` seconds (None: no limit). A cancellation
    always propagates (and cancels `awaitable`)."""
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if task not in done:
        task.cancel()
        raise TimeoutError
    return task.result()


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Wait until `event` is set or `timeout` passes; True if it was set."""
    try:
        await with_timeout(event.wait(), timeout)
    except TimeoutError:
        return False
    return True
