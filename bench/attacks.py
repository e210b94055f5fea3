"""Every attack of the security review against a staging table, its console and its data directory, for a
studio's security officer (docs/security.md says what each one checks and what the studio must configure).

    python bench/attacks.py --broker mqtts://broker.staging:8883 --tls-ca ca.crt \\
        --username security-probe --password ... --studio lisbon-1 --table bac-01 \\
        --panel http://127.0.0.1:8080 --metrics http://127.0.0.1:9464 --console http://127.0.0.1:8090 \\
        --data-dir /var/lib/tablectl

It runs the parts its arguments name, in this order: the MQTT side (`attacks_bus.py`: --broker, --studio
and --table), the table's data directory (`attacks_misc.py`: --data-dir; with --broker the retained disk
status too), and the HTTP side (`attacks_http.py`: any of --panel, --metrics, --console; last, because its
console part leaves this client's address paused for a minute, which is what it tests). Each part takes its
own options as documented in its script (`python bench/attacks_bus.py --help`, ...); this script hands every
option to each part that knows it. Never against a live table: an attack that is not held knocks the table
off its broker for a moment, and the HTTP part floods.

Prints one line per attack (`held` / `NOT held`, with what it saw) and exits 1 if any was not held, 2 if no
part could run (nothing named, or the table was not online for the MQTT part).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from types import ModuleType

import attacks_bus
import attacks_http
import attacks_misc

Outcome = tuple[str, bool, str]

#: (part, its module, whether argv names what it needs)
PARTS: list[tuple[str, ModuleType, Callable[[argparse.Namespace], bool]]] = [
    ("mqtt", attacks_bus, lambda ns: bool(ns.broker and ns.studio and ns.table)),
    ("files", attacks_misc, lambda ns: bool(ns.data_dir)),
    ("http", attacks_http, lambda ns: bool(ns.panel or ns.metrics or ns.console)),
]


def _which(argv: list[str]) -> argparse.Namespace:
    """What the arguments name, to pick the parts (each part then parses its own options)."""
    parser = argparse.ArgumentParser(add_help=False)
    for option in ("--broker", "--studio", "--table", "--data-dir", "--panel", "--metrics", "--console"):
        parser.add_argument(option)
    return parser.parse_known_args(argv)[0]


def _own_options(module: ModuleType, argv: list[str]) -> argparse.Namespace:
    parser: argparse.ArgumentParser = module.build_parser()
    args, _ = parser.parse_known_args(argv)
    return args


async def run_all(argv: list[str]) -> tuple[list[Outcome], list[str]]:
    named = _which(argv)
    outcomes: list[Outcome] = []
    ran: list[str] = []
    for part, module, wanted in PARTS:
        if not wanted(named):
            continue
        ran.append(part)
        run: Callable[[argparse.Namespace], Awaitable[list[Outcome]]] = module.run_attacks
        outcomes += [
            (f"{part}: {name}", held, detail) for name, held, detail in await run(_own_options(module, argv))
        ]
    return outcomes, ran


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(arg in ("-h", "--help") for arg in argv):
        print(__doc__)
        return 0
    outcomes, ran = asyncio.run(run_all(argv))
    for name, held, detail in outcomes:
        print(f"{'held    ' if held else 'NOT held'}  {name}: {detail}")
    if not ran:
        print("nothing to attack: name a broker and table, a data directory, or a panel, metrics or console")
        return 2
    if any(name.startswith("mqtt: preflight") for name, _, _ in outcomes):
        return 2
    return 0 if all(held for _, held, _ in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
