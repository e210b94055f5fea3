"""The demo's way of never hanging, pure: a part that does not stop is left behind instead of holding
the demo.

Its unit tests; the e2e ones are in `tests/e2e/test_demo_supervisor.py`."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from controller import demo as demo_module

pytestmark = pytest.mark.unit


async def test_a_part_that_does_not_stop_is_left_behind_instead_of_hanging_the_demo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(demo_module, "STOP_TIMEOUT_SECONDS", 0.2)
    release = asyncio.Event()

    async def stubborn() -> None:  # shrugs off the cancellation, as a hung library call might
        while not release.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await release.wait()

    loop = asyncio.get_running_loop()
    started = loop.time()
    await demo_module._bounded("a stubborn part", stubborn())
    assert loop.time() - started < 2.0
    release.set()  # let it end before the test's loop closes
    await asyncio.sleep(0)
