"""HID boot-keyboard input reports -> characters -> barcodes. Pure: no USB, no clock.

An ordinary USB barcode scanner in keyboard mode "types" what it reads, as a keyboard does: 8-byte input
reports `[modifiers, reserved, key1 .. key6]` (the USB HID boot protocol's keyboard report), each listing the
keys held down at that moment; an all-zero report releases them. So a key counts once, in the report where it
first appears (a scanner may send the next key before releasing the last one: key rollover), and a barcode is
the characters up to Enter.

Usage IDs (the HID keyboard page, 0x07): 0x04-0x1D are a-z, 0x1E-0x27 are 1-9 and 0, 0x28 is Enter,
plus the few marks barcodes carry (space, '-', '.', '/'). Modifier bits 0x02 and 0x20 (left and right shift)
make upper case; caps lock is not tracked (a scanner does not press it). `0x01` in every key slot is the
keyboard's ErrorRollOver (too many keys to report): such a report says nothing about the keys, and is skipped.

A report that is not a boot-keyboard report (wrong length, reserved byte set) is counted and skipped; a key
this table does not know becomes `?` in the barcode, so the barcode is a misread rather than a wrong card.
Nothing here raises on what a device sends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

REPORT_SIZE = 8
LEFT_SHIFT = 0x02
RIGHT_SHIFT = 0x20
SHIFT = LEFT_SHIFT | RIGHT_SHIFT
ENTER = 0x28
KEYPAD_ENTER = 0x58
ERROR_ROLL_OVER = 0x01
#: what stands for a key the table does not know: no card code contains it
UNKNOWN_KEY = "?"
#: a barcode longer than this is not a card's: the rest is dropped and the barcode is a misread
MAX_BARCODE = 64

#: usage id -> (character, character with shift)
KEYS: dict[int, tuple[str, str]] = {
    **{0x04 + i: (chr(ord("a") + i), chr(ord("A") + i)) for i in range(26)},
    **{0x1E + i: (str((i + 1) % 10), "!@#$%^&*()"[i]) for i in range(10)},
    0x2C: (" ", " "),
    0x2D: ("-", "_"),
    0x37: (".", ">"),
    0x38: ("/", "?"),
}
#: character -> (usage id, shift needed): how a scanner types it (the simulator and the tests)
USAGES: dict[str, tuple[int, bool]] = {}
for _usage, (_plain, _shifted) in KEYS.items():
    USAGES.setdefault(_plain, (_usage, False))
    USAGES.setdefault(_shifted, (_usage, True))


@dataclass(slots=True)
class KeyboardStats:
    reports: int = 0
    barcodes: int = 0
    rejected: Counter[str] = field(default_factory=Counter)


class BarcodeDecoder:
    """Feed it reports (`feed`), take the barcodes finished by Enter. Keeps the keys held and the barcode
    being typed; `reset()` forgets both (the scanner went away mid-barcode)."""

    def __init__(self, on_reject: Callable[[str], None] | None = None) -> None:
        self.stats = KeyboardStats()
        self._on_reject = on_reject
        self._held: frozenset[int] = frozenset()
        self._typed: list[str] = []

    @property
    def typing(self) -> bool:
        """Characters have come since the last Enter."""
        return bool(self._typed)

    def reset(self) -> str:
        """Forget the keys held and the unfinished barcode; returns that unfinished text."""
        typed = "".join(self._typed)
        self._held = frozenset()
        self._typed = []
        return typed

    def feed(self, report: bytes) -> list[str]:
        """One input report; returns the barcodes it finished (usually none, at most a few)."""
        self.stats.reports += 1
        if len(report) != REPORT_SIZE:
            self._reject("report length")
            return []
        modifiers, reserved, keys = report[0], report[1], report[2:]
        if reserved != 0:
            self._reject("reserved byte set")
            return []
        if all(key == ERROR_ROLL_OVER for key in keys):
            self._reject("error roll-over")
            return []
        pressed = [key for key in keys if key != 0]
        held = frozenset(pressed)
        new = [key for i, key in enumerate(pressed) if key not in self._held and key not in pressed[:i]]
        self._held = held
        finished = []
        for key in new:
            if key in (ENTER, KEYPAD_ENTER):
                if self._typed:
                    finished.append("".join(self._typed))
                    self.stats.barcodes += 1
                self._typed = []
                continue
            if len(self._typed) >= MAX_BARCODE:
                self._reject("barcode too long")
                self._typed[-1] = UNKNOWN_KEY
                continue
            chars = KEYS.get(key)
            if chars is None:
                self._reject("unknown key")
                self._typed.append(UNKNOWN_KEY)
                continue
            self._typed.append(chars[1] if modifiers & SHIFT else chars[0])
        return finished

    def _reject(self, reason: str) -> None:
        self.stats.rejected[reason] += 1
        if self._on_reject is not None:
            self._on_reject(reason)

    def feed_all(self, reports: Iterable[bytes]) -> list[str]:
        barcodes = []
        for report in reports:
            barcodes += self.feed(report)
        return barcodes


def key_report(usage: int = 0, modifiers: int = 0, *more: int) -> bytes:
    """One boot-keyboard report holding `usage` (and `more` keys) with `modifiers`; no key: a release."""
    keys = [key for key in (usage, *more) if key]
    return bytes([modifiers, 0, *keys, *([0] * (6 - len(keys)))])


def type_barcode(text: str, *, rollover: bool = False) -> list[bytes]:
    """The reports a scanner sends to type `text` then Enter: each key pressed then released, or with
    `rollover` the next key pressed before the last one is released (as fast scanners do)."""
    reports = []
    previous: int | None = None
    for char in [*text, "\n"]:
        usage, shift = (ENTER, False) if char == "\n" else USAGES[char]
        modifiers = LEFT_SHIFT if shift else 0
        if rollover and previous is not None and previous != usage:
            reports.append(key_report(previous, modifiers, usage))  # the next key before the last is up
            reports.append(key_report(usage, modifiers))
        else:
            if rollover and previous is not None:
                reports.append(key_report())  # the same key again: it must be released first
            reports.append(key_report(usage, modifiers))
            if not rollover:
                reports.append(key_report())
        previous = usage
    if rollover:
        reports.append(key_report())
    return reports
