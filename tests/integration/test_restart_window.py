"""The instant after a restart: the first line the table reads is often the shoe's repeat of a card it
never ACKed. That one line makes two readings (the shoe coming online, then the card), and they are
committed with the line's "delivered" mark in ONE journal transaction, or not at all.

Committed in two, a crash or a full disk between them left the line marked delivered and its card recorded
nowhere: on the next restart the shoe's repeat was ACKed and dropped as a duplicate, and the card was lost
behind an ACK (the shoe dealt 2S TH 3D 3C 7H 4D, Banker 7-2; the table published Player 9-7).

The service here is the real `TableService` (the real shoe session, runtime, baccarat flow and SQLite
journal file); the crash is simulated where it matters: right after the k-th commit of the restart window
the process is gone (nothing more it would have done happens), for every k that window has; a full disk is
SQLite refusing the k-th commit. Each time the table is started again from the same journal file, as
systemd would, the shoe repeats what it was never ACKed, and no card may be missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.commands import Resume
from controller.journal import Journal
from controller.service import ServiceFailure, TableService
from controller.table_build import TABLE_CONFIGS
from drivers.line.framing import encode_line

pytestmark = pytest.mark.integration

T0 = 1_790_000_000.0


class Crashed(BaseException):
    """The process died right after a commit: nothing after it runs."""


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def table(tmp_path: Path, clock: Clock) -> TableService:
    config = TABLE_CONFIGS.from_dict(
        {
            "table": {"studio_id": "s1", "table_id": "b1", "game": "baccarat", "data_dir": str(tmp_path)},
            "broker": {"url": "mqtt://127.0.0.1:9"},  # never connected: the bus does not run here
            "devices": {"shoe": {"protocol": "shoe-line", "port": str(tmp_path / "no-shoe")}},
            "game": {"betting_seconds": 5.0, "round_gap_seconds": 1.0},
        },
        environ={},
    )
    return TableService(config, clock=clock)


async def feed(service: TableService, clock: Clock, line: str) -> None:
    """One line from the shoe, as the runner delivers it: the session's readings of it, in one call."""
    clock.now += 0.5
    service.apply_step(service.machine.feed("shoe", encode_line(line), clock.now))


def tick(service: TableService, clock: Clock, seconds: float) -> None:
    clock.now += seconds
    while (step := service.machine.tick(clock.now)) is not None:
        service.apply_step(step)


def dealt(journal_file: Path) -> list[str]:
    journal = Journal(journal_file, source="studio/s1/table/b1")
    try:
        return [e.data["card"] for e in journal.read(1) if e.type == "card.dealt"]
    finally:
        journal.close()


def failing_after(service: TableService, commits: int, failure: BaseException) -> list[int]:
    """Make the service's journal fail after `commits` more commits: `Crashed` right after that commit, or
    a full disk (the commit itself refused). Returns a counter of the commits made."""
    made = [0]
    append = service.journal.append

    def counted(*args: Any, **kwargs: Any) -> Any:
        if made[0] == commits and not isinstance(failure, Crashed):
            raise failure
        result = append(*args, **kwargs)
        made[0] += 1
        if made[0] == commits and isinstance(failure, Crashed):
            raise failure
        return result

    service.journal.append = counted  # type: ignore[method-assign]
    return made


async def the_dealer_draws_while_the_table_is_down(tmp_path: Path, clock: Clock) -> Path:
    """A baccarat round under way: 2S dealt and ACKed, then the table stops; the shoe gave out TH meanwhile,
    never ACKed, so it repeats TH to whatever opens the port next."""
    service = table(tmp_path, clock)
    await feed(service, clock, "HELLO SIMSHOE 1.0.0 SIM0001")
    tick(service, clock, 0.0)  # the first round opens
    tick(service, clock, 5.0)  # betting closes
    await feed(service, clock, "CARD 0001 2S")
    assert dealt(service.journal_path) == ["2S"]
    path = service.journal_path
    service.journal.close()  # kill -9: nothing else happens
    return path


@pytest.mark.parametrize("failure", [Crashed(), OSError(28, "No space left on device")], ids=["kill", "disk"])
@pytest.mark.parametrize("commits", [0, 1, 2])
async def test_the_first_line_after_a_restart_is_committed_whole(
    tmp_path: Path, commits: int, failure: BaseException
) -> None:
    clock = Clock()
    journal_file = await the_dealer_draws_while_the_table_is_down(tmp_path, clock)

    # restarted: the table recovers the round paused; the shoe's first line is its repeat of TH
    restarted = table(tmp_path, clock)
    restarted.apply_step(restarted.machine.recovered(clock.now))
    made = failing_after(restarted, commits, failure)
    try:
        await feed(restarted, clock, "CARD 0002 TH")
    except (Crashed, ServiceFailure):
        pass
    finally:
        restarted.journal.close()
    crashed_at = made[0]

    # started again: the shoe repeats TH until a table ACKs it (a repeat of a line the journal marks
    # delivered is ACKed and dropped: it must then be in the journal already)
    again = table(tmp_path, clock)
    again.apply_step(again.machine.recovered(clock.now))
    await feed(again, clock, "CARD 0002 TH")
    step, _ = again.machine.command(Resume(by="supervisor"), clock.now)
    again.apply_step(step)
    for line in ("CARD 0003 3D", "CARD 0004 3C", "CARD 0005 7H", "CARD 0006 4D"):
        await feed(again, clock, line)
    again.journal.close()
    assert dealt(journal_file) == ["2S", "TH", "3D", "3C", "7H", "4D"], f"failed after commit {crashed_at}"
