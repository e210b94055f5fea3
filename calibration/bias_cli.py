"""`tablectl calibrate wheel-bias FILE`: test a wheel's recorded results for bias.

FILE holds one winning number per line, or JSON Lines event envelopes as published on `events/round.result`
(or a journal export): the number is taken from `data.number` of each roulette `round.result`; other events
are skipped, and an envelope seen twice (at-least-once delivery: same `source` and `id`) counts once.
Blank lines and lines starting with `#` are ignored.

Exit status: 0 no bias flagged, 1 bias flagged, 2 unreadable input (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calibration.wheel_bias import POCKETS, check_bias

EXIT_FAIR = 0
EXIT_BIASED = 1
EXIT_UNREADABLE = 2


class UnreadableInput(ValueError):
    """The results file cannot be used; the message says where and why."""


def read_numbers(path: Path) -> list[int]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UnreadableInput(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise UnreadableInput(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:
        raise UnreadableInput(f"{path}: {exc.strerror or exc}") from None
    numbers: list[int] = []
    seen_events: set[tuple[str, str]] = set()
    for line_number, line in enumerate(text.splitlines(), start=1):
        content = line.strip()
        if not content or content.startswith("#"):
            continue
        where = f"{path}:{line_number}"
        if content.startswith("{"):
            number = _number_from_event(content, where, seen_events)
            if number is not None:
                numbers.append(number)
        else:
            numbers.append(_number_from_text(content, where))
    if not numbers:
        raise UnreadableInput(f"{path}: no roulette results found")
    return numbers


def _number_from_text(content: str, where: str) -> int:
    # Only plain decimal 0-36: "00" (double-zero wheel) or "07" must not quietly become 0 or 7.
    if content != "0" and not (content.isdigit() and content.isascii() and not content.startswith("0")):
        raise UnreadableInput(f"{where}: {content[:40]!r} is not a single-zero roulette number")
    number = int(content)
    if number >= POCKETS:
        raise UnreadableInput(f"{where}: {number} is not a single-zero roulette number (0-36)")
    return number


def _number_from_event(content: str, where: str, seen_events: set[tuple[str, str]]) -> int | None:
    try:
        event: Any = json.loads(content)
    except json.JSONDecodeError as exc:
        raise UnreadableInput(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(event, dict):
        raise UnreadableInput(f"{where}: a JSON line must be an event envelope object")
    if event.get("type") != "round.result":
        return None
    data = event.get("data")
    if not isinstance(data, dict):
        raise UnreadableInput(f"{where}: round.result without a data object")
    if data.get("game", "roulette") != "roulette":
        return None  # another game's result in a mixed export
    event_id, source = event.get("id"), event.get("source")
    if isinstance(event_id, str):
        key = (str(source), event_id)
        if key in seen_events:
            return None
        seen_events.add(key)
    number = data.get("number")
    if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number < POCKETS:
        raise UnreadableInput(f"{where}: data.number {number!r} is not a single-zero roulette number")
    return number


def run(args: argparse.Namespace) -> int:
    try:
        numbers = read_numbers(Path(args.file))
    except UnreadableInput as exc:
        print(f"tablectl: error: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    report = check_bias(numbers, sectors=args.sectors, alpha=args.alpha)
    print(report.render())
    return EXIT_BIASED if report.biased else EXIT_FAIR


def _sector_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 2 <= value <= POCKETS:
        raise argparse.ArgumentTypeError(f"must be between 2 and {POCKETS}")
    return value


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1, e.g. 0.01")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `wheel-bias` to the `tablectl calibrate` tools."""
    parser = subparsers.add_parser(
        "wheel-bias",
        help="test a wheel's results for bias (chi-square by number and by wheel sector)",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", metavar="FILE", help="one number per line, or JSON Lines round.result events")
    parser.add_argument(
        "--sectors", type=_sector_count, default=8, help="contiguous wheel sectors to test (default 8)"
    )
    parser.add_argument("--alpha", type=_alpha, default=0.01, help="significance level (default 0.01)")
    parser.set_defaults(func=run)


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (`python -m calibration.bias_cli FILE`), same options and exit codes."""
    parser = argparse.ArgumentParser(prog="tablectl calibrate")
    register(parser.add_subparsers(dest="calibration", required=True, metavar="TOOL"))
    args = parser.parse_args(["wheel-bias", *(sys.argv[1:] if argv is None else argv)])
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
