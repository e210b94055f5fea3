"""Replay a device capture through the same session, game flow and journal as the live service.

Used by `tablectl replay` (audits, golden files) and by the tests. Time is virtual: the capture's own
timestamps, so the vendor's timing windows (e.g. the wheel's 3 s and 5 s) behave as they did on the table.
A raw-bytes capture has no timestamps: its lines are spaced `RAW_LINE_SPACING` seconds apart.

The replay drives the table's machine (`controller.machine.TableMachine`), the very objects the live
service drives: the sessions of the table's devices, the core and the merge of their deadlines. Time jumps:
between two records the machine is called only at its deadlines (`next_deadline()`), in time order, exactly
as the live service sleeps until them; nothing is polled.

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

from controller.commands import CommandError, parse_command
from controller.config import ConfigError, TableConfig
from controller.events import Envelope
from controller.journal import Journal
from controller.machine import MachineStep, TableMachine
from controller.table_build import TABLE_CONFIGS, build_core, build_session
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
    return TABLE_CONFIGS.from_dict(raw, environ={}, source="replay")


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


class _Replay:
    """One replay: the table's machine (its core and the sessions of its devices) and an in-memory journal,
    on the capture's clock. Every input goes to the machine as the live service gives it; the bytes the
    sessions would send go nowhere (`quiet`)."""

    def __init__(self, config: TableConfig, auto_resume: bool) -> None:
        sessions = {
            name: build_session(name, device.protocol, device.options)
            for name, device in config.devices.items()
            if not is_camera(device.protocol)
        }
        cameras = [name for name, device in config.devices.items() if is_camera(device.protocol)]
        self.machine = TableMachine(
            build_core(config),
            sessions,
            outside=cameras,
            quiet=True,
            resume_by=REPLAY_IDENTITY if auto_resume else None,
            now=RAW_EPOCH,
        )
        self.journal = Journal(":memory:", source=config.topic_root, clock=lambda: self.machine.now)
        self.refused_commands = 0

    def journaled(self, step: MachineStep | None) -> list[Envelope]:
        """As the live service: the step's events go into the journal (its requests serve nothing here)."""
        if step is None or not step.events:
            return []
        return self.journal.append(step.events)

    def advance(self, until: float) -> Iterator[Envelope]:
        """Handle every deadline of the machine up to `until`, earliest first, each at its own time."""
        while (step := self.machine.tick(until)) is not None:
            yield from self.journaled(step)

    def record(self, device: str, record: CaptureRecord) -> MachineStep | None:
        now = self.machine.now
        if record.direction == "rx":
            return self.machine.feed(device, record.data, now)
        if record.direction == "link":
            info = record.info or {}
            if info.get("event") == "open":
                return self.machine.link_opened(device, now)
            return self.machine.link_lost(device, now, str(info.get("reason", "link lost")))
        return self.command(record)

    def command(self, record: CaptureRecord) -> MachineStep | None:
        info = record.info or {}
        try:
            by = str(info.get("by", "supervisor"))
            command = parse_command(str(info.get("kind")), str(info.get("name")), info.get("payload"), by=by)
            step, _ = self.machine.command(command, self.machine.now)
        except CommandError as exc:
            # accepted live, refused now: the replay is not telling the same story; say so, never hide it
            self.refused_commands += 1
            log.warning(
                "replay: recorded %s %s refused at %.3f: %s",
                info.get("kind"),
                info.get("name"),
                self.machine.now,
                exc,
            )
            return None
        return step


#: one thing that happened at the table: a record of a device's capture, or a camera's reading with its time
_Item = tuple[str, CaptureRecord] | tuple[float, Reading]


def replay(
    config: TableConfig,
    records: list[CaptureRecord],
    *,
    auto_resume: bool = False,
    camera: list[tuple[float, Reading]] | None = None,
) -> Iterator[Envelope]:
    """Yield every envelope the live service would have journaled for this capture of the table's first
    device, in order. `camera`: the camera's readings with their times (`camera_timeline`), merged in by
    time."""
    device = next(iter(config.devices))
    yield from replay_table(config, {device: records}, auto_resume=auto_resume, camera=camera)


def replay_table(
    config: TableConfig,
    captures: dict[str, list[CaptureRecord]],
    *,
    auto_resume: bool = False,
    camera: list[tuple[float, Reading]] | None = None,
) -> Iterator[Envelope]:
    """Yield every envelope the live service would have journaled for these captures of the table's devices
    (a shoe's and its shuffler's), in order: all of them go through one machine, merged by time (at equal
    times in the order given, the cameras' readings last)."""
    player = _Replay(config, auto_resume)
    timeline: list[_Item] = []
    unlinked: list[str] = []
    for device, records in captures.items():
        expanded: list[CaptureRecord] = []
        for record in records:
            expanded.extend(_split_raw(record) if record.t is None else [record])
        # tx is regenerated by the session; meta was read by replay_config
        items: list[_Item] = [(device, r) for r in expanded if r.direction in ("rx", "link", "cmd")]
        if not any(r.direction == "link" for r in expanded):
            unlinked.append(device)  # a device-only capture: the link was up when it starts
        # by time; at equal times what came first first (sorted() is stable)
        timeline = sorted([*timeline, *items], key=lambda item: _time(item, 0.0)) if timeline else items
    if camera:
        timeline = sorted([*timeline, *camera], key=lambda item: _time(item, 0.0))

    machine = player.machine
    started = False
    for item in timeline:
        t = _time(item, machine.now + RAW_LINE_SPACING)
        if not started:
            started = True
            machine.now = t
            for device in unlinked:
                yield from player.journaled(machine.link_opened(device, t))
        yield from player.advance(t)
        machine.now = max(machine.now, t)
        if isinstance(item[1], CaptureRecord):
            device, record = item
            yield from player.journaled(player.record(str(device), record))
        else:
            yield from player.journaled(machine.deliver([item[1]]))
    player.journal.close()


def _time(item: _Item, default: float) -> float:
    when = item[1].t if isinstance(item[1], CaptureRecord) else item[0]
    assert not isinstance(when, str)
    return when if when is not None else default


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
