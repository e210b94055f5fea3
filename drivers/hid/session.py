"""`HidBarcodeSession`: a USB barcode scanner in keyboard mode as a card reader (`hid-barcode`). Pure.

Barcoded cards are scanned as they are dealt, instead of being read by a scanning shoe; any card game can
use one as its `shoe` device. Bytes in: the HID input reports the transport read (`drivers.hid.usb`), each
framed as one length byte then the report, so the reports' boundaries survive the byte stream (a capture
replays the same frames). The reports are decoded into barcodes (`drivers.hid.keyboard`), and each barcode is
looked up in the barcode -> card map of the options:

- a card's barcode -> `CardSeen(code)`;
- the cut card's barcode (option `cut_card`) -> `CutCardSeen`;
- any other barcode is a misread -> `CardUnread(ref)`: the dealer scans the card again, and the next card
  barcode is reported as that card's re-scan (`CardSeen(rescan_of=ref)`), as a shoe's NOREAD / RESCAN —
  unless the table has set that card aside meanwhile (below);
- the same barcode again within `same_code_guard` seconds is the scanner re-triggering on one card, not a
  second card: dropped and counted in `stats.duplicates`;
- characters with no Enter for `barcode_timeout` seconds are an unfinished barcode: dropped and counted.

Commands: a scanner has no gate and takes nothing from the host, so a card flow's `lock` / `unlock` (and
`status`) change nothing at the device and are accepted as such; any other command is refused. The session
keeps the gate the table asked for, for one thing: a scanner has no sequence numbers, so whether a barcode
is a re-scan or a new card is only the dealer's doing, and the table says which it waits for only through
its gate. A misread while the gate is locked is a card the table cannot take now; when the table then asks
for `lock` again, it paused to hold that card out of procedure, and the supervisor's decision (resume or
void) sets it aside: the dealer was told to put it aside, so the next card barcode is a new card, not its
re-scan. A misread while the gate is open is the card the table waits for, through any pause: the dealer
re-scans it after the resume. (Should the guess still be wrong, the table pauses on it: a re-scan of a card
it set aside, or one it does not wait for, is held out of procedure.)

Health: a USB scanner says nothing unless it scans, so there is no heartbeat: online while the transport
holds the device (`connection_made`), offline when it is unplugged (`connection_lost`).
Bad reports and misreads are counted in `stats.rejected` by reason; nothing a device sends raises.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, StringConstraints, field_validator

from drivers.hid.keyboard import BarcodeDecoder
from drivers.readings import CardSeen, CardUnread, CutCardSeen, DeviceOffline, DeviceOnline, Reading
from drivers.session import DeviceCommand, DeviceSession, SessionOptions

_CARD_CODE = re.compile(r"^[A23456789TJQK][SHDC]$")
#: what a card flow asks of its reader that a scanner has nothing to do for (no gate, no status query)
_NOTHING_TO_DO = frozenset({"lock", "unlock", "status"})
#: the longest report a frame may carry (full-speed interrupt packets are at most 64 bytes)
MAX_FRAME = 64


def default_card_barcodes() -> dict[str, str]:
    """A real studio's baccarat cards: suit letter then rank (`SA`, `H10`, `DQ`) -> card code (`AS`...)."""
    ranks = {"A": "A", **{str(n): str(n) for n in range(2, 10)}, "10": "T", "J": "J", "Q": "Q", "K": "K"}
    return {f"{suit}{printed}": f"{rank}{suit}" for suit in "SHDC" for printed, rank in ranks.items()}


def _barcode_key(barcode: str) -> str:
    """Barcodes compare without case: a scanner set to lower case still reads the same cards."""
    return barcode.strip().upper()


Barcode = Annotated[str, StringConstraints(min_length=1, max_length=64, strip_whitespace=True)]


class HidBarcodeOptions(SessionOptions):
    cards: dict[Barcode, str] | None = Field(
        default=None,
        description="barcode -> card code (rank + suit, e.g. 'TD'); default: suit letter then rank, "
        "'SA' 'S2'..'S10' 'SJ' 'SQ' 'SK', the same for H, D and C",
    )
    cut_card: Barcode | None = Field(default=None, description="the cut card's barcode, if it has one")
    same_code_guard: float = Field(
        default=0.8, ge=0, description="the same barcode again within this many seconds is one card"
    )
    barcode_timeout: float = Field(
        default=0.5, gt=0, description="characters with no Enter for this long are dropped"
    )

    @field_validator("cards")
    @classmethod
    def _card_codes(cls, cards: dict[str, str] | None) -> dict[str, str] | None:
        if cards is None:
            return None
        bad = [f"{barcode}={code!r}" for barcode, code in cards.items() if not _CARD_CODE.match(code)]
        if bad:
            raise ValueError(f"not card codes (rank + suit, e.g. 'TD'): {', '.join(bad)}")
        keys = [_barcode_key(barcode) for barcode in cards]
        if len(set(keys)) != len(keys):
            raise ValueError("two barcodes differ only in case: a scanner cannot tell them apart")
        return cards


class HidBarcodeSession(DeviceSession):
    protocol = "hid-barcode"
    Options = HidBarcodeOptions

    def __init__(
        self,
        name: str,
        *,
        cards: dict[str, str] | None = None,
        cut_card: str | None = None,
        same_code_guard: float = 0.8,
        barcode_timeout: float = 0.5,
    ) -> None:
        super().__init__(name)
        options = HidBarcodeOptions(
            cards=cards, cut_card=cut_card, same_code_guard=same_code_guard, barcode_timeout=barcode_timeout
        )
        table = options.cards if options.cards is not None else default_card_barcodes()
        self.cards = {_barcode_key(barcode): code for barcode, code in table.items()}
        self.cut_card = _barcode_key(options.cut_card) if options.cut_card else None
        if self.cut_card is not None and self.cut_card in self.cards:
            raise ValueError(f"the cut card's barcode {options.cut_card!r} is also a card's")
        self.same_code_guard = options.same_code_guard
        self.barcode_timeout = options.barcode_timeout
        self.decoder = BarcodeDecoder(on_reject=self.stats.reject)
        self._buffer = bytearray()
        self._scans = 0
        #: the ref of the misread card waiting for its re-scan
        self.unread_ref: str | None = None
        #: the gate as the table last asked for it (`lock` / `unlock`); None until it asks
        self.gate_open: bool | None = None
        #: the waiting misread came while the gate was locked: the table could not take it then
        self._unread_while_locked = False
        self._last: tuple[str, float] | None = None
        self._typing_since: float | None = None

    # -- DeviceSession -----------------------------------------------------------------------------
    def connection_made(self, now: float) -> list[Reading]:
        self._forget_partial()
        return [DeviceOnline(device=self.name, time=now, detail="USB barcode scanner")]

    def connection_lost(self, now: float, reason: str) -> list[Reading]:
        self._forget_partial()
        return [DeviceOffline(device=self.name, time=now, reason=reason)]

    def data_received(self, data: bytes, now: float) -> list[Reading]:
        self.stats.bytes_received += len(data)
        self._buffer += data
        readings: list[Reading] = []
        while self._buffer:
            size = self._buffer[0]
            if size == 0 or size > MAX_FRAME:
                # Not a frame the transport writes: nothing after it can be trusted to be aligned.
                self.stats.reject("bad frame")
                self._buffer.clear()
                break
            if len(self._buffer) < 1 + size:
                break
            report = bytes(self._buffer[1 : 1 + size])
            del self._buffer[: 1 + size]
            for barcode in self.decoder.feed(report):
                readings += self._barcode(barcode, now)
            self._typing_since = (self._typing_since or now) if self.decoder.typing else None
        return readings

    def tick(self, now: float) -> list[Reading]:
        deadline = self.next_deadline()
        if deadline is not None and now >= deadline:
            self.stats.reject("unfinished barcode")
            self.decoder.reset()
            self._typing_since = None
        return []

    def next_deadline(self) -> float | None:
        if self._typing_since is None:
            return None
        return self._typing_since + self.barcode_timeout

    def command(self, command: DeviceCommand, now: float) -> list[Reading]:
        if command.name == "lock":
            if self._unread_while_locked:
                # locked again after a misread it could not take: the table paused to hold it for the
                # supervisor, who sets it aside; nobody re-scans it (module docstring)
                self.unread_ref = None
                self._unread_while_locked = False
            self.gate_open = False
        elif command.name == "unlock":
            # the table takes cards now: a misread it held while paused may be the card it waits for
            self.gate_open = True
            self._unread_while_locked = False
        if command.name in _NOTHING_TO_DO:
            return []
        return super().command(command, now)

    # -- internals ---------------------------------------------------------------------------------
    def _forget_partial(self) -> None:
        if self.decoder.reset():
            self.stats.reject("unfinished barcode")
        self._buffer.clear()
        self._typing_since = None

    def _barcode(self, barcode: str, now: float) -> list[Reading]:
        self.stats.lines_received += 1
        key = _barcode_key(barcode)
        raw = f"barcode {barcode}"
        last = self._last
        self._last = (key, now)
        if last is not None and last[0] == key and now - last[1] < self.same_code_guard:
            self.stats.duplicates += 1
            return []
        if key == self.cut_card:
            return [CutCardSeen(device=self.name, time=now, raw=raw, ref=self._next_ref())]
        code = self.cards.get(key)
        if code is None:
            self.stats.reject("unknown barcode")
            # a misread while a card waits for its re-scan is that card's re-scan misreading again
            rescan_of = self.unread_ref
            if rescan_of is None:
                self._unread_while_locked = self.gate_open is False
            ref = self.unread_ref or self._next_ref()
            self.unread_ref = ref
            return [CardUnread(device=self.name, time=now, raw=raw, ref=ref, rescan_of=rescan_of)]
        if self.unread_ref is not None:
            ref, self.unread_ref = self.unread_ref, None
            self._unread_while_locked = False
            return [CardSeen(device=self.name, time=now, raw=raw, code=code, ref=ref, rescan_of=ref)]
        return [CardSeen(device=self.name, time=now, raw=raw, code=code, ref=self._next_ref())]

    def _next_ref(self) -> str:
        self._scans += 1
        return str(self._scans)


def frame(report: bytes) -> bytes:
    """A report as the transport hands it on: its length, then the report."""
    return bytes([len(report)]) + report
