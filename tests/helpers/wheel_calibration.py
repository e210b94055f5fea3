"""What the tests of `test_wheel_calibration`, split by kind, share:
`tests/unit/calibration/test_wheel_calibration.py`, `tests/integration/test_wheel_calibration.py`."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from calibration.wheel_cli import register, run_procedure

# --- the command line ---------------------------------------------------------------------------------------


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tablectl calibrate")
    register(parser.add_subparsers(dest="calibration", required=True))
    return parser.parse_args(argv)


async def run_cli(argv: list[str], ask: Callable[[str], bool] | None = None) -> tuple[int, list[str]]:
    shown: list[str] = []
    args = parse(argv)
    code = await run_procedure(args, args.procedure, ask=ask or (lambda q: True), show=shown.append)
    return code, shown
