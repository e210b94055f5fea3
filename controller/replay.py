"""Replay a device capture through the same session, game flow and journal as the live service.

Used by `tablectl replay` (audits, golden files) and by the tests. Time is virtual: the capture's own
timestamps, so the vendor's timing windows (e.g. the wheel's 3 s and 5 s) behave as they did on the table.
A raw-bytes capture has no timestamps: its lines are spaced `RAW_LINE_SPACING` seconds apart.

Time jumps: between two records the replay calls the session and the core only at their deadlines
(`next_deadline()`), in time order, exactly as the live service sleeps until them; nothing is polled.

Two kinds of capture:
- A table's own capture (`tablectl run` writes a `meta` record first, then `link` and `cmd` records beside
  the device bytes): the replay runs with the table's own game settings and applies every command and input
  the table accepted at its time, so it reproduces the table's events — pauses, resumes and voids included.
- A capture of device traffic only (a vendor's log, another system's recording): it knows nothing of bets
  or supervisors, so the game's replay policy (`GameSpec.replay_overrides`; docs/decisions.md, "Replay")
  decides when betting closes, and a round paused by a fault stays paused unless `auto_resume` is set: the
  replay then resumes it as soon as every device is healthy again, as a supervisor at the desk would,
  `by: "replay"`.

A game with a camera (sic bo) also needs the camera's capture (`drivers.camera.capture`): its health records
and the readings it delivered (`DiceRead`: values or refusal, frame file, sha256) join the byte capture's
timeline by time and go to the core as they did on the table. With a reader (`reread`), each recorded dice
reading is replaced by a new reading of its saved frame, which is first checked against its sha256: the audit
of "would this reader, on these very frames, give the same rounds?". Differences are counted and logged.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from controller.commands import CommandError, Resume, parse_command
from controller.config import ConfigError, TableConfig, config_from_dict
from controller.events import Envelope
from controller.journal import Journal
from controller.runtime import Step, TableCore
from controller.service import build_core, build_session
from drivers import readings as reading_types
from drivers.capture import CaptureError, CaptureRecord, read_capture
from drivers.readings import DiceRead, Reading
from drivers.registry import is_camera

log = logging.getLogger(__name__)

RAW_LINE_SPACING = 0.05
#: virtual epoch for raw captures (2000-01-01T00:00:00Z), so envelopes carry a plausible, fixed time
RAW_EPOCH = 946684800.0
#: the identity recorded for resumes the replay makes itself (--auto-resume)
REPLAY_IDENTITY = "replay"


def _capture_meta(records: list[CaptureRecord]) -> dict[str, Any] | None:
    for record in records:
        if record.direction == "meta" and record.info is not None:
            return record.info
    return None


def replay_config(
    game: str,
    protocol: str,
    base: TableConfig | None = None,
    meta: dict[str, Any] | None = None,
    camera_capture: str | Path | None = None,
) -> TableConfig:
    """The configuration a replay runs with: the table's own (from `base`, else the capture's `meta`), and,
    for a device-only capture (no `meta`), the game's replay policy on top. A game with a camera gets it,
    with `camera_capture` as its capture (ConfigError without one)."""
    from controller.games import game_spec  # local: keeps the module import light for the CLI's --help

    spec = game_spec(game)
    if meta is None and spec.replay_overrides is None:
        known = ", ".join(sorted(name for name, s in _games().items() if s.replay_overrides is not None))
        raise ConfigError(f"replay: {game} captures cannot be replayed yet (replayable: {known})")
    if base is not None:
        raw = base.model_dump(mode="python")
    else:
        table_id = str(meta.get("table_id", "replay")) if meta else "replay"
        raw = {"table": {"table_id": table_id, "studio_id": "replay", "game": game}, "devices": {}}
        if meta and isinstance(meta.get("settings"), dict):
            raw["game"] = dict(meta["settings"])
        if meta and meta.get("manual_card_confirmation") in ("dealer", "supervisor"):
            raw["table"]["manual_card_confirmation"] = meta["manual_card_confirmation"]
    raw["table"]["game"] = game
    device_name = next(iter(spec.devices))
    raw["devices"] = {device_name: {"protocol": protocol, "port": "replay://capture"}}
    for name, protocols in spec.devices.items():
        if name != device_name and any(is_camera(p) for p in protocols):
            if camera_capture is None:
                raise ConfigError(f"replay: a {game} round needs the {name}'s capture too (--camera)")
            raw["devices"][name] = {"protocol": "camera", "port": "replay", "capture": str(camera_capture)}
    if meta is None:
        raw["game"] = {**raw.get("game", {}), **(spec.replay_overrides or {})}
    # One device's capture is replayed: the game's optional devices (a shuffler) are not there, and nothing
    # waits for them (the rounds are the capture's; the shuffles were the shuffler's capture).
    for role in spec.optional_devices:
        raw.setdefault("game", {})[spec.optional_device_setting(role)] = None
    return config_from_dict(raw, environ={}, source="replay")


def _games() -> dict[str, Any]:
    from controller.games import GAMES

    return GAMES


def _split_raw(record: CaptureRecord) -> list[CaptureRecord]:
    lines = record.data.splitlines(keepends=True)
    return [CaptureRecord(t=None, direction=record.direction, data=line) for line in lines]


def camera_timeline(
    name: str, records: list[Any], reread: Callable[[Any, int], Any] | None = None
) -> list[tuple[float, Reading]]:
    """A camera capture's readings, as the table received them: health, and what its frames were read as
    (with `reread`, a `drivers.dice.adapter` reader: read again from the saved frame, verified first)."""
    from drivers.camera.capture import FrameRecord, HealthRecord, ReadingRecord

    frames = {record.file: record for record in records if isinstance(record, FrameRecord)}
    timeline: list[tuple[float, Reading]] = []
    for record in records:
        if not isinstance(record, HealthRecord | ReadingRecord):
            continue
        cls = getattr(reading_types, record.kind, None)
        if not (isinstance(cls, type) and issubclass(cls, Reading)):
            raise CaptureError(f"camera capture: a {record.kind!r} is not a reading this tablectl knows")
        try:
            reading = TypeAdapter(cls).validate_python({**record.fields, "device": name, "time": record.t})
        except ValidationError as exc:
            raise CaptureError(
                f"camera capture: a {record.kind} record at {record.t} does not fit: {exc}"
            ) from None
        if reread is not None and isinstance(reading, DiceRead) and reading.frame:
            frame = frames.get(reading.frame)
            if frame is None:
                raise CaptureError(
                    f"camera capture: frame {reading.frame} of cycle {reading.cycle_id} is not in it"
                )
            readout = reread(frame.load(), 3)
            if readout.values != reading.values:
                log.warning(
                    "replay: cycle %s re-read as %s (%s); the table read %s (%s)",
                    reading.cycle_id,
                    readout.values,
                    readout.reason,
                    reading.values,
                    reading.reason,
                )
            reading = dataclasses.replace(
                reading, values=readout.values, reason=readout.reason, dice=readout.dice
            )
        timeline.append((record.t, reading))
    return timeline


class _Replayer:
    """One replay: the session, the core and an in-memory journal on the capture's clock."""

    def __init__(self, config: TableConfig, auto_resume: bool) -> None:
        self.device_name = next(iter(config.devices))
        device = config.devices[self.device_name]
        self.session = build_session(self.device_name, device.protocol, device.options)
        self.core: TableCore = build_core(config)
        self.now = RAW_EPOCH
        self.journal = Journal(":memory:", source=config.topic_root, clock=lambda: self.now)
        self.auto_resume = auto_resume
        self.pending: list[Envelope] = []
        self.refused_commands = 0

    def apply(self, step: Step, now: float) -> None:
        """As the service's `_apply`: journal the events, hand the requests to the session."""
        if step.events:
            self.pending.extend(self.journal.append(step.events))
        for request in step.requests:
            if request.device == self.device_name:
                # the session's state follows what the table asked of it; the bytes go nowhere
                self.feed(self.session.command(request.command, now))
        if self.auto_resume and self.core.paused and self.core.devices_ready:
            try:
                resumed, _ = self.core.on_command(Resume(by=REPLAY_IDENTITY), now)
            except CommandError:
                return
            self.apply(resumed, now)

    def feed(self, readings: list[Reading]) -> None:
        for reading in readings:
            self.apply(self.core.on_reading(reading, reading.time), reading.time)

    def advance(self, until: float) -> None:
        """Handle every session and core deadline up to `until`, earliest first, each at its own time. The
        session is woken only when its tick may report something: what it would send goes nowhere here."""
        while True:
            session_due = self.session.next_reading_deadline()
            core_due = self.core.next_deadline()
            due = min((d for d in (session_due, core_due) if d is not None), default=None)
            if due is None or due > until:
                return
            self.now = max(self.now, due)
            if session_due is not None and session_due <= due:
                self.feed(self.session.tick(self.now))
            else:
                self.apply(self.core.on_tick(self.now), self.now)
            self.session.data_to_send()  # nobody listens in a replay

    def command(self, record: CaptureRecord) -> None:
        info = record.info or {}
        try:
            by = str(info.get("by", "supervisor"))
            command = parse_command(str(info.get("kind")), str(info.get("name")), info.get("payload"), by=by)
            step, _ = self.core.on_command(command, self.now)
        except CommandError as exc:
            # accepted live, refused now: the replay is not telling the same story; say so, never hide it
            self.refused_commands += 1
            log.warning(
                "replay: recorded %s %s refused at %.3f: %s",
                info.get("kind"),
                info.get("name"),
                self.now,
                exc,
            )
            return
        self.apply(step, self.now)


def replay(
    config: TableConfig,
    records: list[CaptureRecord],
    *,
    auto_resume: bool = False,
    camera: list[tuple[float, Reading]] | None = None,
) -> Iterator[Envelope]:
    """Yield every envelope the live service would have journaled for this capture, in order.

    `camera`: the camera's readings with their times (`camera_timeline`), merged in by time."""
    replayer = _Replayer(config, auto_resume)
    expanded: list[CaptureRecord] = []
    for record in records:
        expanded.extend(_split_raw(record) if record.t is None else [record])
    # tx is regenerated by the session; meta was read by replay_config
    timeline: list[CaptureRecord | tuple[float, Reading]] = [
        record for record in expanded if record.direction in ("rx", "link", "cmd")
    ]
    links_recorded = any(isinstance(r, CaptureRecord) and r.direction == "link" for r in timeline)
    if camera:
        # by time; at equal times the device bytes first (sorted() is stable)
        timeline = sorted([*timeline, *camera], key=lambda item: _time(item, 0.0))

    started = False
    for item in timeline:
        t = _time(item, replayer.now + RAW_LINE_SPACING)
        if not started:
            started = True
            replayer.now = t
            if not links_recorded:  # a device-only capture: the link was up when it starts
                replayer.feed(replayer.session.connection_made(t))
        replayer.advance(t)
        replayer.now = max(replayer.now, t)
        if isinstance(item, tuple):
            replayer.feed([item[1]])
            yield from replayer.pending
            replayer.pending.clear()
            continue
        record = item
        if record.direction == "rx":
            replayer.feed(replayer.session.data_received(record.data, replayer.now))
        elif record.direction == "link":
            info = record.info or {}
            if info.get("event") == "open":
                replayer.feed(replayer.session.connection_made(replayer.now))
            else:
                reason = str(info.get("reason", "link lost"))
                replayer.feed(replayer.session.connection_lost(replayer.now, reason=reason))
        else:
            replayer.command(record)
        replayer.session.data_to_send()  # nobody listens in a replay
        yield from replayer.pending
        replayer.pending.clear()
    replayer.journal.close()


def _time(item: CaptureRecord | tuple[float, Reading], default: float) -> float:
    if isinstance(item, tuple):
        return item[0]
    return item.t if item.t is not None else default


def replay_file(
    game: str,
    protocol: str,
    capture: str | Path,
    base: TableConfig | None = None,
    *,
    auto_resume: bool = False,
    camera_capture: str | Path | None = None,
    reread: Callable[[Any, int], Any] | None = None,
) -> Iterator[Envelope]:
    """Replay a byte capture (and, for a game with a camera, the camera's capture: every frame it kept is
    checked against its sha256 first; `reread` reads the dice again from those frames)."""
    records = read_capture(capture)
    config = replay_config(game, protocol, base, _capture_meta(records), camera_capture)
    camera = None
    if camera_capture is not None:
        from drivers.camera.capture import read_camera_capture

        name = next(n for n, d in config.devices.items() if is_camera(d.protocol))
        camera = camera_timeline(name, read_camera_capture(camera_capture), reread)
    yield from replay(config, records, auto_resume=auto_resume, camera=camera)
