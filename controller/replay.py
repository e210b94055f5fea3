"""Replay a device capture through the same session, game flow and journal as the live service.

Used by `tablectl replay` (audits, golden files) and by the tests. Time is virtual: the capture's own
timestamps, so the vendor's timing windows (e.g. the wheel's 3 s and 5 s) behave as they did on the table.
A raw-bytes capture has no timestamps: its lines are spaced `RAW_LINE_SPACING` seconds apart.

Replay settings differ from a live table in two ways only, because a capture knows nothing of bets:
a round opens as soon as the previous one closed, and a card game's betting closes when its first card
arrives. A capture starts with a freshly shuffled shoe.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from controller.config import ConfigError, TableConfig, config_from_dict
from controller.events import Envelope
from controller.journal import Journal
from controller.runtime import Step, TableCore
from controller.service import build_core, build_session
from drivers.capture import CaptureRecord, read_capture
from drivers.readings import Reading

RAW_LINE_SPACING = 0.05
#: the live service ticks every 100 ms; a replay ticks at least as often on the capture's clock
TICK = 0.1
#: virtual epoch for raw captures (2000-01-01T00:00:00Z), so envelopes carry a plausible, fixed time
RAW_EPOCH = 946684800.0

REPLAY_GAME_OVERRIDES: dict[str, dict[str, Any]] = {
    "baccarat": {"round_gap_seconds": 0.0, "betting_closes_on_first_card": True, "auto_new_shoe": True},
    "roulette": {"round_gap_seconds": 0.0, "user_start": False},
}


def replay_config(game: str, protocol: str, base: TableConfig | None = None) -> TableConfig:
    """The configuration a replay runs with: the table's own (if given) with the replay overrides."""
    if game not in REPLAY_GAME_OVERRIDES:
        # a capture knows nothing of bets: without overrides saying when betting closes, a replay would
        # reject every card dealt inside the live betting window; refuse rather than print a wrong story
        known = ", ".join(sorted(REPLAY_GAME_OVERRIDES))
        raise ConfigError(f"replay: {game} captures cannot be replayed yet (replayable: {known})")
    if base is not None:
        raw = base.model_dump(mode="python")
    else:
        raw = {"table": {"table_id": "replay", "studio_id": "replay", "game": game}, "devices": {}}
    raw["table"]["game"] = game
    from controller.games import game_spec  # local: keeps the module import light for the CLI's --help

    device_name = next(iter(game_spec(game).devices))
    raw["devices"] = {device_name: {"protocol": protocol, "port": "replay://capture"}}
    raw["game"] = {**raw.get("game", {}), **REPLAY_GAME_OVERRIDES.get(game, {})}
    return config_from_dict(raw, environ={}, source="replay")


def _split_raw(record: CaptureRecord) -> list[CaptureRecord]:
    lines = record.data.splitlines(keepends=True)
    return [CaptureRecord(t=None, direction=record.direction, data=line) for line in lines]


def replay(config: TableConfig, records: list[CaptureRecord]) -> Iterator[Envelope]:
    """Yield every envelope the live service would have journaled for this capture, in order."""
    device_name = next(iter(config.devices))
    device = config.devices[device_name]
    session = build_session(device_name, device.protocol, device.options)
    core: TableCore = build_core(config)
    clock = [RAW_EPOCH]  # the journal's clock: the capture's time
    journal = Journal(":memory:", source=config.topic_root, clock=lambda: clock[0])
    pending: list[Envelope] = []

    def apply(step: Step, now: float) -> None:
        """As the service's `_apply`: journal the events, hand the requests to the session."""
        if step.events:
            pending.extend(journal.append(step.events))
        for request in step.requests:
            if request.device == device_name:
                # the session's state follows what the table asked of it; the bytes go nowhere
                feed(session.command(request.command, now))

    def feed(readings: list[Reading]) -> None:
        for reading in readings:
            apply(core.on_tick(reading.time), reading.time)
            apply(core.on_reading(reading, reading.time), reading.time)

    expanded: list[CaptureRecord] = []
    for record in records:
        expanded.extend(_split_raw(record) if record.t is None else [record])
    received = [record for record in expanded if record.direction == "rx"]  # tx is regenerated

    now = RAW_EPOCH
    next_tick: float | None = None
    for record in received:
        now = record.t if record.t is not None else now + RAW_LINE_SPACING
        if next_tick is None:
            next_tick = clock[0] = now
            feed(session.connection_made(now))
        # the time between two records passes in ticks, as it would live
        while next_tick <= now:
            clock[0] = next_tick
            feed(session.tick(next_tick))
            apply(core.on_tick(next_tick), next_tick)
            next_tick += TICK
        clock[0] = now
        feed(session.data_received(record.data, now))
        session.data_to_send()  # nobody listens in a replay
        yield from pending
        pending.clear()
    journal.close()


def replay_file(
    game: str, protocol: str, capture: str | Path, base: TableConfig | None = None
) -> Iterator[Envelope]:
    config = replay_config(game, protocol, base)
    yield from replay(config, read_capture(capture))
