"""Run a TableBus in its own process, so a test can `kill -9` it and watch the broker publish the Last Will.

    python -m controller.testing.bus_process --url mqtt://127.0.0.1:PORT --root studio/s1/table/t1 \
        --journal FILE [--append N]

`--append N` journals N `round.opened` events before connecting (continuing the journal's sequence), so a
restart shows events surviving in order. SIGTERM closes the bus gracefully (status offline, then disconnect).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from typing import Any

from controller.bus import TableBus
from controller.commands import Command
from controller.config import BrokerSettings
from controller.events import RoundOpened, make_event
from controller.journal import Journal


async def _reply_ok(command: Command) -> dict[str, Any]:
    return {"handled": type(command).__name__}


async def main(args: argparse.Namespace) -> None:
    journal = Journal(args.journal, args.root)
    first = journal.last_sequence + 1
    events = [
        make_event(
            "round.opened",
            RoundOpened(game="baccarat", round_id=f"r{n}", round_number_in_shoe=n, betting_closes_at=None),
            time=1_700_000_000.0 + n,
        )
        for n in range(first, first + args.append)
    ]
    if events:
        journal.append(events)
    settings = BrokerSettings(url=args.url, reconnect_min_seconds=0.05, reconnect_max_seconds=0.5)
    bus = TableBus(settings, root=args.root, journal=journal, handle_command=_reply_ok)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, lambda: loop.create_task(bus.close()))
    try:
        await bus.run()
    finally:
        journal.close()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--journal", required=True)
    parser.add_argument("--append", type=int, default=0)
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
