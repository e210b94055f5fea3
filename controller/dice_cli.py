"""`tablectl dice read`: read dice photos with a dice calibration, one JSON line per image.

    tablectl dice read --calibration CAL.json [--expect N] IMAGE...

Each line: {"image": path, "status": "ok" | "reject", "values": [...], "reason": kind or null,
"detail": what was seen, "confidence": ..., "dice": [{"value", "box", "pips", "confidence", "reason"}],
"ms": reading time}. Exit status: 0 every image read, 1 some image refused, 2 the tool could not run
(no calibration, a file that is not an image).

OpenCV and the reader are imported when the command runs, not when `tablectl` builds its parser. The reading
itself is `calibration.dice_cli.read_photos`, which `tablectl calibrate dice-check` prints in words.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from drivers.dice.reader import DiceResult


def register(subparsers: argparse._SubParsersAction) -> None:
    dice = subparsers.add_parser("dice", help="the sic bo dice reader: read photos with a calibration")
    tools = dice.add_subparsers(dest="dice_tool", required=True, metavar="TOOL")
    read = tools.add_parser("read", help="read dice photos: one JSON line per image")
    read.add_argument("--calibration", required=True, type=Path, help="a dice calibration file (CAL.json)")
    read.add_argument(
        "--expect", type=int, default=3, help="how many dice must lie in the tray (default 3; 0: any number)"
    )
    read.add_argument("images", nargs="+", type=Path, metavar="IMAGE")
    read.set_defaults(func=run_read)


def run_read(args: argparse.Namespace) -> int:
    from calibration.dice_cli import read_photos

    def emit(path: Path, result: DiceResult, ms: float) -> None:
        line = {
            "image": str(path),
            "status": "ok" if result.readable else "reject",
            "values": list(result.values or []),
            "reason": None if result.readable else result.reason,
            "detail": result.detail,
            "confidence": getattr(result, "confidence", 0.0),
            "dice": [
                {
                    "value": die.value,
                    "box": list(die.box),
                    "pips": [list(p) for p in die.pip_centres],
                    "confidence": die.confidence,
                    "reason": die.problem,
                }
                for die in result.dice
            ],
            "ms": round(ms, 2),
        }
        print(json.dumps(line), flush=True)

    expect = args.expect if args.expect > 0 else None
    return read_photos(args.calibration, args.images, expect, emit, _error)


def _error(message: str) -> None:
    print(f"tablectl: error: {message}", file=sys.stderr)
