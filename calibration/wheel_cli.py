"""`tablectl calibrate wheel-sensors | wheel-firing set|check | wheel-selftest`: SS2 wheel calibration tools.

Each tool opens the wheel's serial port (9600 8N1), identifies the wheel (`*K`, `*S`), guides the operator
through the procedure with yes/no questions, prints what the wheel answers, and writes a JSON record into
`--out` (default ./calibration-records). Exit status: 0 done, 1 the wheel reported a failure (broken sensors,
self-test errors), 2 the procedure could not run (no answer, port missing, cancelled).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from calibration.wheel import (
    DEFAULT_RECORDS_DIR,
    SELF_TEST_SETTLE_S,
    SELF_TEST_TIMEOUT_S,
    SS2_BAUDRATE,
    Ask,
    CalibrationCancelled,
    CalibrationError,
    Show,
    WheelConsole,
    WheelIdentity,
    calibrate_sensors,
    check_firing_position,
    identify,
    run_self_test,
    set_firing_position,
    write_record,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def ask_operator(question: str) -> bool:
    """Interactive yes/no on the terminal (default no: nothing happens to the wheel by accident)."""
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the wheel tools under `tablectl calibrate`."""
    sensors = subparsers.add_parser(
        "wheel-sensors", help="calibrate the SS2 ball sensor positions (*C): ball fixed in pocket 0"
    )
    _common(sensors)
    sensors.set_defaults(func=_entry, procedure=_sensors)

    firing = subparsers.add_parser("wheel-firing", help="store or check the SS2 ball firing position (*T c)")
    actions = firing.add_subparsers(dest="firing_action", required=True, metavar="ACTION")
    firing_set = actions.add_parser("set", help="turn pocket 0 to the firing position by hand, then store it")
    _common(firing_set)
    firing_set.add_argument(
        "--value", required=True, help="the firing position value to store with *T c (docs/calibration.md)"
    )
    firing_set.set_defaults(func=_entry, procedure=_firing_set)
    firing_check = actions.add_parser("check", help="print the stored ball firing position (*T C)")
    _common(firing_check)
    firing_check.set_defaults(func=_entry, procedure=_firing_check)

    selftest = subparsers.add_parser("wheel-selftest", help="run the SS2 self-test (*F, up to 5 minutes)")
    _common(selftest)
    selftest.add_argument("--timeout", type=float, default=SELF_TEST_TIMEOUT_S, help="seconds (default 300)")
    selftest.add_argument(
        "--settle",
        type=float,
        default=SELF_TEST_SETTLE_S,
        help="after an error code, seconds to wait for more before the test counts as over (default 10)",
    )
    selftest.set_defaults(func=_entry, procedure=_selftest)


def _entry(args: argparse.Namespace) -> int:
    return run_cli(args, args.procedure)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", required=True, help="the wheel's serial port (path, socket://, rfc2217://)")
    parser.add_argument("--baudrate", type=int, default=SS2_BAUDRATE, help="default 9600 (SS2)")
    parser.add_argument("--out", default=DEFAULT_RECORDS_DIR, help="directory for the JSON record")
    parser.add_argument("--yes", action="store_true", help="answer yes to every question (unattended)")


Procedure = Callable[[argparse.Namespace, WheelConsole, WheelIdentity, Ask, Show], Awaitable[int]]


def run_cli(
    args: argparse.Namespace,
    procedure: Procedure,
    *,
    ask: Ask | None = None,
    show: Show | None = None,
) -> int:
    """Run one tool; `ask`/`show` are injectable so tests drive the prompts."""
    return asyncio.run(run_procedure(args, procedure, ask=ask, show=show))


async def run_procedure(
    args: argparse.Namespace,
    procedure: Procedure,
    *,
    ask: Ask | None = None,
    show: Show | None = None,
) -> int:
    say: Show = show or (lambda text: print(text, flush=True))
    asker: Ask = ask or ask_operator
    if args.yes:

        def asker(question: str) -> bool:
            say(f"{question} yes (--yes)")
            return True

    from drivers.transport import LinkError, open_serial

    try:
        reader, writer = await open_serial(args.port, baudrate=args.baudrate)
    except LinkError as exc:
        say(f"tablectl: error: {exc}")
        return EXIT_USAGE
    console = WheelConsole(reader, writer)
    try:
        identity = await identify(console)
        firmware = f", firmware {identity.firmware['S']}" if "S" in identity.firmware else ""
        say(f"Wheel on {args.port}: {identity.name}{firmware}")
        return await procedure(args, console, identity, asker, say)
    except CalibrationCancelled:
        say("Cancelled: nothing was changed on the wheel.")
        return EXIT_USAGE
    except CalibrationError as exc:
        say(f"tablectl: error: {exc}")
        return EXIT_USAGE
    finally:
        await console.close()


def _record(
    args: argparse.Namespace, kind: str, identity: WheelIdentity, ok: bool, result: dict[str, Any], say: Show
) -> None:
    path = write_record(args.out, kind, port=args.port, identity=identity, ok=ok, result=result)
    say(f"Record written: {path}")


async def _sensors(
    args: argparse.Namespace, console: WheelConsole, identity: WheelIdentity, ask: Ask, say: Show
) -> int:
    outcome = await calibrate_sensors(console, ask, say)
    say(("OK: " if outcome.ok else "FAILED: ") + outcome.message)
    _record(args, "wheel-sensors", identity, outcome.ok, outcome.as_record(), say)
    return EXIT_OK if outcome.ok else EXIT_FAILED


async def _firing_set(
    args: argparse.Namespace, console: WheelConsole, identity: WheelIdentity, ask: Ask, say: Show
) -> int:
    outcome = await set_firing_position(console, ask, say, args.value)
    say(("OK: " if outcome.ok else "FAILED: ") + outcome.message)
    _record(args, "wheel-firing-set", identity, outcome.ok, outcome.as_record(), say)
    return EXIT_OK if outcome.ok else EXIT_FAILED


async def _firing_check(
    args: argparse.Namespace, console: WheelConsole, identity: WheelIdentity, ask: Ask, say: Show
) -> int:
    outcome = await check_firing_position(console, say)
    say(outcome.message)
    _record(args, "wheel-firing-check", identity, outcome.ok, outcome.as_record(), say)
    return EXIT_OK


async def _selftest(
    args: argparse.Namespace, console: WheelConsole, identity: WheelIdentity, ask: Ask, say: Show
) -> int:
    outcome = await run_self_test(console, ask, say, timeout=args.timeout, settle=args.settle)
    if outcome.ok:
        say("OK: self-test passed, no errors")
    else:
        say(f"FAILED: {outcome.message}")
        for line in outcome.described():
            say(f"  {line}")
    _record(args, "wheel-selftest", identity, outcome.ok, outcome.as_record(), say)
    return EXIT_OK if outcome.ok else EXIT_FAILED


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (the same tools as `tablectl calibrate ...`)."""
    parser = argparse.ArgumentParser(prog="tablectl calibrate")
    register(parser.add_subparsers(dest="calibration", required=True, metavar="TOOL"))
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
