"""Readings: what a device tells the table, normalised and independent of any protocol or game.

Drivers produce readings; the controller consumes them. Every reading carries the device name it came
from (its name in the table config), the host time it was observed at (epoch seconds: the wall clock in
the live service, the capture's clock in a replay) and the raw device text that produced it, so every
event can be traced back to the bytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Reading:
    device: str
    time: float
    raw: str = ""
    #: the acknowledgement key of the device message this reading came from ("" when the device does not
    #: repeat it): how the message is journaled as delivered. Not part of what was read: equality, repr and
    #: the records kept of readings (held readings, camera captures) leave it out
    ack: str = field(default="", compare=False, repr=False)


def reading_fields(reading: Reading) -> dict[str, Any]:
    """What was read, as a record keeps it: every field of `reading` but its acknowledgement key."""
    fields = asdict(reading)
    del fields["ack"]
    return fields


# --- link and health (any device) -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceOnline(Reading):
    """The link is up and the device introduced itself (or answered)."""

    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceOffline(Reading):
    """The link is down: port gone, or the device stayed silent past its heartbeat window."""

    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceFault(Reading):
    """The device reports a fault that needs the dealer or a technician (jam, broken sensor...)."""

    code: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceFaultCleared(Reading):
    """The device reports it is operational again after a fault."""

    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceStatus(Reading):
    """An informational state report (e.g. shoe READY / LOCKED / EMPTY). Flows may ignore it."""

    state: str


# --- card scanners -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CardSeen(Reading):
    """A card left the shoe and was read. `code` is a syntactically valid card code like 'TD'.

    `rescan_of` is set when this is the re-read of a card previously reported unread.
    """

    code: str
    ref: str = ""
    rescan_of: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CardUnread(Reading):
    """A card left the shoe but could not be read: the dealer must pass it over the reader again.

    `rescan_of` is set when this is a failed re-read of a card already out (a re-scan that misread too):
    no new card left the shoe.
    """

    ref: str
    rescan_of: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CutCardSeen(Reading):
    """The cut card came out: the current round is the last of the shoe."""

    ref: str = ""


# --- card shuffler ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShuffleDone(Reading):
    """The shuffler finished and counted exactly `decks` x 52 cards: the shuffled cards may be dealt.

    A shuffle whose count is off is never a ShuffleDone (see ShuffleFailed).
    """

    shuffle_id: str
    decks: int
    cards: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ShuffleFailed(Reading):
    """A shuffle did not give a usable deck: jam, door opened, motor, empty input, or a card count that is
    not `decks` x 52 (code `COUNT_MISMATCH` when the host found it in DONE, the device's `E02` when the
    shuffler found it itself). The cards must not be dealt; `expected`/`actual` are the counts when known.
    `shuffle_id` is the id of the failed shuffle when known ("" otherwise).
    """

    code: str
    reason: str
    expected: int | None = None
    actual: int | None = None
    shuffle_id: str = ""


# --- roulette wheel ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelGameStarted(Reading):
    """A new game began on the wheel (place your bets; the ball is about to be launched)."""

    spin: int


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelBallLaunched(Reading):
    """The ball is in the rim: the spin has started (a fault from now on pauses, not cancels)."""

    spin: int
    rotor_rpm: float
    direction: str  # "clockwise" | "anticlockwise"


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelNoMoreBets(Reading):
    spin: int


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelResult(Reading):
    """The ball rests in a pocket; the driver already checked the single line against the status."""

    number: str  # "0".."36", or "00"/"000"/"0000" on wheels with extra zeros
    spin: int
    rotor_rpm: float
    direction: str


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelGameVoided(Reading):
    """The wheel cannot complete this game (miss-spin, ball lost): bets are refunded, the wheel re-spins."""

    reason: str
    spin: int


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelIdle(Reading):
    """The wheel is powered down / closed (state 6) or waiting before a game (state 1)."""

    state: int
    during_game: bool = False


# --- dice ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DiceAtRest(Reading):
    """The shaker's cycle `cycle_id` ended and the dice are still: the camera may read them now."""

    cycle_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameCaptured(Reading):
    """A camera frame that was used (e.g. read for a result), as kept in the camera's capture.

    The pixels are never in a reading: `file` is the frame's image file relative to the capture's JSON Lines
    file and `sha256` the hash of that file, so an audit can find the exact frame and prove it unchanged.
    Both are empty when the camera keeps no capture.
    """

    file: str
    sha256: str
    width: int
    height: int
    seq: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DiceRead(Reading):
    """The camera's reading of the dice of shake cycle `cycle_id`: the values, or a refusal and why.

    `values` are the dice left to right in the frame (None: refused; the dice are never guessed). `reason`
    says why a reading was refused (count, cocked, stacked, unclear, no frame...). `frame` is the frame's
    image file relative to the camera capture's JSON Lines file and `sha256` the hash of that file (both empty
    when no frame could be grabbed). `dice` is the reader's evidence, one entry per die found:
    `{"value": int | None, "confidence": float, "box": [x, y, w, h], "reason": str}`.
    """

    cycle_id: str
    values: tuple[int, ...] | None
    reason: str = ""
    frame: str = ""
    sha256: str = ""
    dice: tuple[dict[str, Any], ...] = ()
