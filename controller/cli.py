"""`tablectl` command line: run the service, the demo, replays, schemas and calibration tools.

Operator errors (bad config, unknown protocol, missing serial port, unreadable capture) print one line
starting with `tablectl: error:` and exit 2; no traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import getpass
import json
import logging
import os
import shutil
import signal
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller import __version__

if TYPE_CHECKING:  # imported where they are used: `tablectl run` starts lean
    from controller.config import TableConfig
    from controller.sd_notify import Notifier
    from controller.service import Part, TableService

EXIT_USAGE = 2
#: a secret as the config is shown: as pydantic shows the broker password (a SecretStr)
SECRET_SHOWN = "**********"


class OperatorError(Exception):
    """An error worded for the operator; printed as one line."""


def _port_is_path(port: str) -> bool:
    return "://" not in port


def check_ports(config: object) -> None:
    from controller.config import TableConfig

    assert isinstance(config, TableConfig)
    from drivers.registry import is_camera

    for name, device in config.devices.items():
        if is_camera(device.protocol):
            continue  # a frame source, not a serial port: the camera runner reports it offline until it opens
        if _port_is_path(device.port) and not os.path.exists(device.port):
            raise OperatorError(
                f"devices.{name}: serial port {device.port} not found (is the {name} plugged in? "
                f"check `ls /dev/serial/by-id/` and the udev rules)"
            )


def make_capture_dirs(config: object) -> None:
    """Each device capture's directory (0700), so that a missing `captures/` is not a failure at start."""
    from controller.config import TableConfig

    assert isinstance(config, TableConfig)
    for name, device in config.devices.items():
        if device.capture is None:
            continue
        try:
            device.capture.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise OperatorError(
                f"devices.{name}.capture: cannot create {device.capture.parent}: {exc.strerror}"
            ) from None


#: how long READY=1 waits for the first broker connection (the table runs without one: events wait)
READY_BROKER_WAIT_SECONDS = 5.0
#: below this much free space where the table writes, it does not start but waits: its journal could not
#: take a round, and a start that fails at once would only be restarted by systemd until it gave up
START_MIN_FREE_BYTES = 8 * 1024 * 1024
#: how often a table waiting for disk space looks again
DISK_WAIT_SECONDS = 5.0


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def disk_space_problem(config: object, free: Callable[[Path], int] | None = None) -> str | None:
    """Why the table cannot start for want of space where it writes (its data directory, its captures'
    directories), or None."""
    from controller.config import TableConfig

    assert isinstance(config, TableConfig)
    free = free or (lambda path: shutil.disk_usage(path).free)
    places = [config.table.data_dir, *(d.capture.parent for d in config.devices.values() if d.capture)]
    for place in places:
        left = free(_nearest_existing(place))
        if left < START_MIN_FREE_BYTES:
            return f"{left} bytes free under {place} (the table needs {START_MIN_FREE_BYTES} to start)"
    return None


def _disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return isinstance(exc, sqlite3.Error) and "full" in str(exc).lower()


async def open_table(
    config: object,
    notifier: Any,
    *,
    discard_state: bool = False,
    free: Callable[[Path], int] | None = None,
    interval: float = DISK_WAIT_SECONDS,
) -> Any:
    """The table service, once its journal can be opened. On a full disk it waits, however long, and says
    why on its systemd status (`systemctl status tablectl`) and in the log, instead of exiting: an exit
    would be restarted by systemd every `RestartSec`, and the unit's start limit would soon make systemd
    give up on the table for good. It starts by itself once space is freed."""
    from controller.journal import JournalError
    from controller.runtime import StateMismatch
    from controller.service import TableService
    from controller.table_state import DISCARD_HINT

    log = logging.getLogger("controller")
    waiting = False
    while True:
        problem = disk_space_problem(config, free)
        if problem is None:
            try:
                make_capture_dirs(config)
                notifier.status("opening the journal")
                service = TableService(config, discard_state=discard_state)  # type: ignore[arg-type]
            except JournalError as exc:
                raise OperatorError(str(exc)) from None
            except StateMismatch as exc:
                raise OperatorError(f"{exc}; the stored state was kept: {DISCARD_HINT}") from None
            except (OSError, sqlite3.Error) as exc:
                if not _disk_full(exc):
                    data_dir = config.table.data_dir  # type: ignore[attr-defined]
                    raise OperatorError(
                        f"table.data_dir {data_dir}: cannot keep the journal there: {exc}"
                    ) from None
                problem = f"cannot open the journal: {exc}"
            else:
                if waiting:
                    log.warning("disk space is back: starting the table")
                return service
        message = f"waiting: disk full, {problem}; the table starts by itself once space is freed"
        if not waiting:
            log.error("%s", message)
            notifier.ready(message)  # started, and waiting: not a failed start for systemd to count
            waiting = True
        else:
            notifier.status(message)
        await asyncio.sleep(interval)


def _served(where: str, serve: Callable[[], Awaitable[None]]) -> Part:
    """A server of the table (the panel, the metrics) as a part of its run: its failure (it cannot listen
    on its port) is the operator's one line."""

    async def part() -> None:
        try:
            await serve()
        except Exception as exc:
            raise OperatorError(f"{where}: {exc}") from None

    return part


def _table_parts(service: TableService, notifier: Notifier, watchdog: asyncio.Task[None]) -> dict[str, Part]:
    """What `tablectl run` runs with the table (`TableService.run`'s parts): the systemd watchdog, already
    pinging since before the journal opened, and the panel and the metrics if they are enabled."""
    config = service.config
    parts: dict[str, Part] = {}
    if notifier.watching:  # (without a watchdog it ended at once)
        parts["sd-watchdog"] = lambda: watchdog
    if config.panel.enabled:
        from controller.panel import serve_panel

        panel = config.panel
        parts["panel"] = _served(f"panel on {panel.host}:{panel.port}", lambda: serve_panel(service, panel))
    if config.metrics.enabled:
        from controller.metrics import TableMetrics, serve_metrics

        metrics = config.metrics
        parts["metrics"] = _served(
            f"metrics on {metrics.host}:{metrics.port}", lambda: serve_metrics(TableMetrics(service), metrics)
        )
    return parts


async def _run_service(config_path: str, discard_state: bool = False) -> int:
    from controller.config import plain_password_warning, redact_url
    from controller.files import private_umask
    from controller.sd_notify import Notifier
    from controller.service import ServiceFailure
    from controller.table_build import TABLE_CONFIGS

    private_umask()  # the journal, its WAL and the captures: 0600 in 0700, the service's alone
    config = TABLE_CONFIGS.load(config_path)
    check_ports(config)
    warning = plain_password_warning(config.broker)
    if warning is not None:
        logging.getLogger("controller").warning("%s", warning)
    notifier = Notifier()
    # pinged from the start: a table waiting for disk space is alive, not hung (then the table's run owns it)
    watchdog = asyncio.create_task(notifier.watchdog(), name="sd-watchdog")
    try:
        service: TableService = await open_table(config, notifier, discard_state=discard_state)
    except BaseException:
        watchdog.cancel()
        await asyncio.gather(watchdog, return_exceptions=True)
        notifier.close()
        raise
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, service.stop)

    async def ready() -> None:
        # the journal is open and the bus and device tasks are started: give the broker a moment
        for _ in range(int(READY_BROKER_WAIT_SECONDS / 0.05)):
            if service.bus.connected:
                break
            await asyncio.sleep(0.05)
        broker = "connected" if service.bus.connected else "not reached yet (events wait in the journal)"
        notifier.ready(
            f"table {config.table.table_id}: running; broker {redact_url(config.broker.url)} {broker}"
        )

    stop_status = "stopping"
    try:
        # a part's error (the panel's or the metrics' port taken) comes out as its OperatorError
        await service.run(ready=ready, parts=_table_parts(service, notifier, watchdog))
    except ServiceFailure as exc:
        stop_status = f"failed: {exc}"
        print(
            f"tablectl: error: {exc}; the service stopped (restart it: it recovers from its journal)",
            file=sys.stderr,
        )
        return 1
    finally:
        notifier.stopping(stop_status)
        watchdog.cancel()  # the table's run stopped it, unless it failed before it began
        await asyncio.gather(watchdog, return_exceptions=True)
        notifier.close()
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    return asyncio.run(_run_service(args.config, discard_state=args.discard_state))


async def _run_console(args: argparse.Namespace) -> int:
    from controller.config import ConfigError, plain_password_warning, tls_insecure_warning
    from controller.console.app import Console, ConsoleError, serve_console
    from controller.console.settings import console_config_from_dict, load_console_config

    config = load_console_config(args.config)
    overrides: dict[str, dict[str, object]] = {"console": {}, "broker": {}}
    if args.broker:
        overrides["broker"]["url"] = args.broker
    if args.studio:
        overrides["console"]["studio_id"] = args.studio
    if args.host:
        overrides["console"]["host"] = args.host
    if args.port:
        overrides["console"]["port"] = args.port
    if args.allow_cleartext_broker_passwords:
        overrides["console"]["allow_cleartext_broker_passwords"] = True
    if args.allow_http_sign_in:
        overrides["console"]["allow_http_sign_in"] = True
    if any(overrides.values()):
        raw = config.model_dump(mode="json", exclude_unset=True)
        for section, values in overrides.items():
            raw[section] = {**raw.get(section, {}), **values}
        if config.broker.password is not None:
            raw["broker"]["password"] = config.broker.password.get_secret_value()
        try:
            config = console_config_from_dict(raw, environ={}, source="tablectl console")
        except ConfigError as exc:
            raise OperatorError(str(exc)) from None
    warning = plain_password_warning(config.broker)
    if warning is not None:
        logging.getLogger("controller").warning("%s (the supervisors' passwords too)", warning)
    insecure = tls_insecure_warning(config.broker)
    if insecure is not None:
        logging.getLogger("controller").warning("%s", insecure)
    settings = config.console
    console = Console(config)
    started = asyncio.Event()
    task = asyncio.create_task(serve_console(console, started=started))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, task.cancel)

    async def announce() -> None:
        # once it listens: a console that refuses to start (or cannot) never says where it is
        await started.wait()
        where = f"{settings.scheme}://{settings.host}:{settings.port}/"
        print(f"tablectl console: studio {settings.studio_id} on {where}", file=sys.stderr, flush=True)

    announcing = asyncio.create_task(announce())
    task.add_done_callback(lambda _: announcing.cancel())
    try:
        await task
    except asyncio.CancelledError:
        return 0
    except ConsoleError as exc:
        raise OperatorError(str(exc)) from None
    return 0


def cmd_console(args: argparse.Namespace) -> int:
    return asyncio.run(_run_console(args))


def cmd_demo(args: argparse.Namespace) -> int:
    from controller.demo import run_demo

    if args.rounds < 0:
        raise OperatorError("--rounds must be 0 (run until Ctrl-C) or more")
    return asyncio.run(
        run_demo(
            args.game,
            args.rounds,
            as_json=args.json,
            mqtt_url=args.mqtt_url,
            seed=args.seed,
            faults=not args.no_faults,
            panel_port=args.panel_port or None,
            supervisor=not args.no_supervisor,
        )
    )


def cmd_replay(args: argparse.Namespace) -> int:
    from controller.replay import replay_file
    from controller.table_build import TABLE_CONFIGS
    from drivers.capture import CaptureError

    base = TABLE_CONFIGS.load(args.config) if args.config else None
    reread = None
    if args.reread_with:
        from drivers.dice.adapter import CalibratedDiceReader

        try:
            reread = CalibratedDiceReader.from_file(args.reread_with).read
        except ValueError as exc:
            raise OperatorError(str(exc)) from None
    try:
        for envelope in replay_file(
            args.game,
            args.protocol,
            args.capture,
            base,
            auto_resume=args.auto_resume,
            camera_capture=args.camera,
            reread=reread,
        ):
            print(envelope.model_dump_json(), flush=True)
    except FileNotFoundError as exc:
        raise OperatorError(f"capture {exc.filename or args.capture} not found") from None
    except CaptureError as exc:
        raise OperatorError(f"capture {args.capture}: {exc}") from None
    return 0


def _shown_config(config: TableConfig) -> dict[str, Any]:
    """The config as `check-config --show` prints it, no secret named: the broker password is hidden by its
    type already; the dealers' PIN hashes are hidden the same way, and any password in a device's port URL
    (a network camera's) is redacted."""
    from drivers.url_redaction import redact_urls_in

    shown = config.model_dump(mode="json")
    shown["panel"]["dealers"] = dict.fromkeys(shown["panel"]["dealers"], SECRET_SHOWN)
    for device in shown["devices"].values():
        device["port"] = redact_urls_in(device["port"])
    return shown


def cmd_check_config(args: argparse.Namespace) -> int:
    from controller.checks import check_config
    from controller.table_build import TABLE_CONFIGS

    path = args.config or args.config_option
    if path is None:
        raise OperatorError("check-config needs the table's TOML file: tablectl check-config CONFIG")
    problems = check_config(path)
    for line in problems:
        print(line)
    if problems:
        return 1
    if args.show:
        print(json.dumps(_shown_config(TABLE_CONFIGS.load(path)), indent=2, default=str))
    else:
        print(f"{path}: OK")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    if args.device == "studio":
        return _simulate_studio(args)
    studio_only = [
        f"--{name.replace('_', '-')}" for name in STUDIO_OPTIONS if getattr(args, name) not in (None, False)
    ]
    if studio_only:
        raise OperatorError(f"simulate {args.device}: {', '.join(studio_only)} is for `simulate studio`")
    from drivers.simulate import SimulateError, serve

    if args.pty is not None and args.tcp is not None:
        raise OperatorError("simulate: --pty or --tcp, not both")
    try:
        asyncio.run(
            serve(
                args.device,
                pty=args.pty,
                tcp=args.tcp,
                faults=args.faults,
                seed=args.seed,
                speed=args.speed,
                decks=args.decks,
                deal_every=args.deal_every,
            )
        )
    except SimulateError as exc:
        raise OperatorError(str(exc)) from None
    except OSError as exc:
        raise OperatorError(f"simulate: {exc}") from None
    return 0


#: the options of `tablectl simulate studio` alone
STUDIO_OPTIONS = ("tables", "mqtt_url", "studio", "games", "no_faults", "no_supervisor")


def _simulate_studio(args: argparse.Namespace) -> int:
    from controller.studio_demo import GAME_ORDER, StudioError, run_studio

    device_only = [
        option
        for option, given in (
            ("--pty", args.pty is not None),
            ("--tcp", args.tcp is not None),
            ("--faults", args.faults is not None),
            ("--deal-every", bool(args.deal_every)),
        )
        if given
    ]
    if device_only:
        raise OperatorError(f"simulate studio: {', '.join(device_only)} is for one simulated device")
    games = tuple(g.strip() for g in args.games.split(",") if g.strip()) if args.games else GAME_ORDER
    try:
        return asyncio.run(
            run_studio(
                8 if args.tables is None else args.tables,
                mqtt_url=args.mqtt_url,
                studio_id=args.studio or "sim",
                seed=args.seed,
                faults=not args.no_faults,
                supervisor=not args.no_supervisor,
                games=games,
            )
        )
    except StudioError as exc:
        raise OperatorError(f"simulate studio: {exc}") from None


def _read_pin() -> str:
    if sys.stdin.isatty():
        pin = getpass.getpass("dealer PIN (4-12 digits): ")
        if getpass.getpass("again: ") != pin:
            raise OperatorError("the two PINs differ")
        return pin
    return sys.stdin.readline().strip()  # piped in: `printf 2468 | tablectl panel-hash-pin`


def cmd_panel_hash_pin(args: argparse.Namespace) -> int:
    from controller.pins import hash_pin

    try:
        encoded = hash_pin(_read_pin())
    except ValueError as exc:
        raise OperatorError(str(exc)) from None
    print(encoded)
    return 0


#: commands whose parser is built without the other tools' (schema, panel-hash-pin, calibrate), whose modules
#: take a tenth of a second to import: `tablectl run` starts the table (under systemd, after a crash too)
LEAN_COMMANDS = frozenset({"run", "simulate"})


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; given the command being run and it is in LEAN_COMMANDS, only the core commands."""
    from controller.games import GAMES
    from drivers.registry import PROTOCOLS, SIMULATED

    parser = argparse.ArgumentParser(prog="tablectl", description="Live-casino table hardware controller")
    parser.add_argument("--version", action="version", version=f"tablectl {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv: debug)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", help="run the table service")
    p.add_argument("--config", required=True, help="the table's TOML file")
    p.add_argument(
        "--discard-state",
        action="store_true",
        help="start from a fresh table state even though the journal holds one that does not fit "
        "(a round in progress is lost; its events stay in the journal)",
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "demo", help="a whole simulated table: simulator on a pty, service, broker, virtual dealer"
    )
    p.add_argument("--game", choices=sorted(GAMES), default="baccarat")
    p.add_argument(
        "--rounds", type=int, default=3, help="stop after N rounds (closed or voided); 0: until Ctrl-C"
    )
    p.add_argument("--json", action="store_true", help="print each event envelope exactly as published")
    p.add_argument("--mqtt-url", help="use this broker instead of the embedded one (mqtt://host:port)")
    p.add_argument("--seed", type=int, default=7, help="shuffle / wheel seed")
    p.add_argument("--no-faults", action="store_true", help="no injected no-reads, noise or bad checksums")
    p.add_argument(
        "--no-supervisor",
        action="store_true",
        help="no virtual supervisor: a pause the table makes itself (a device fault) waits for you to resume "
        "or void it on the panel or over MQTT (by default it is resumed after 3 s)",
    )
    p.add_argument(
        "--panel-port",
        type=int,
        default=8080,
        help="serve the dealer's panel on 127.0.0.1:PORT (another free port if taken; 0: no panel)",
    )
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "console",
        help="the studio supervisor's console: every table of a studio, live, in a web page",
    )
    p.add_argument("--config", help="the console's TOML file ([console], [broker])")
    p.add_argument("--broker", help="the studio's broker, mqtt://host:port or mqtts://host:port")
    p.add_argument("--studio", help="the studio id (tables under studio/<id>/table/+)")
    p.add_argument("--host", help="serve the page on this address (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="serve the page on this port (default 8090)")
    p.add_argument(
        "--allow-cleartext-broker-passwords",
        action="store_true",
        help="start although the supervisors' broker passwords would go in clear (mqtt://) to a broker on "
        "another host (console.allow_cleartext_broker_passwords)",
    )
    p.add_argument(
        "--allow-http-sign-in",
        action="store_true",
        help="start although supervisors would sign in over plain HTTP on a non-loopback address "
        "(console.allow_http_sign_in; rather: tls_cert_file, or a TLS proxy on 127.0.0.1)",
    )
    p.set_defaults(func=cmd_console)

    p = sub.add_parser(
        "simulate",
        help="serve a simulated device on a pty or TCP port (prints the path to put in devices.<name>.port), "
        "or a whole simulated studio on a broker (simulate studio --tables N)",
    )
    p.add_argument("device", choices=(*SIMULATED, "studio"))
    p.add_argument("--pty", metavar="PATH", help="also make PATH a symlink to the pty (e.g. /tmp/shoe)")
    p.add_argument(
        "--tcp", type=int, metavar="PORT", help="serve on socket://127.0.0.1:PORT (0: any free port)"
    )
    p.add_argument(
        "--faults",
        metavar="NAME=VALUE,...",
        help="the simulator's fault switches, e.g. noread_rate=0.05,bad_checksum_rate=0.01 "
        "(a wrong name lists them)",
    )
    p.add_argument("--seed", type=int, default=1, help="shuffle / wheel / fault seed (default 1)")
    p.add_argument(
        "--speed", type=float, default=1.0, help="wheel, shuffler, shaker: time runs this much faster"
    )
    p.add_argument("--decks", type=int, default=8, help="shoe: decks per shoe (default 8)")
    p.add_argument(
        "--deal-every",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="shoe: an automatic dealer draws a card this often while the gate is open "
        "(0: only 'draw' on stdin)",
    )
    p.add_argument("--tables", type=int, help="studio: how many tables (default 8, one of each game)")
    p.add_argument(
        "--mqtt-url", help="studio: the studio's broker, mqtt://host:port (default: an embedded one)"
    )
    p.add_argument("--studio", help="studio: the studio id (default sim: tables under studio/sim/table/+)")
    p.add_argument("--games", metavar="GAME,...", help="studio: the games, in turn (default: all eight)")
    p.add_argument("--no-faults", action="store_true", help="studio: no injected no-reads, noise, checksums")
    p.add_argument(
        "--no-supervisor",
        action="store_true",
        help="studio: no virtual supervisor, so a pause waits for the console (by default resumed after 3 s)",
    )
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("replay", help="feed a device capture through the live parser, driver and game flow")
    p.add_argument("--game", choices=sorted(GAMES), required=True)
    p.add_argument("--protocol", choices=sorted(PROTOCOLS), required=True)
    p.add_argument("--config", help="take the table's settings (ids, game options) from this TOML file")
    p.add_argument(
        "--auto-resume",
        action="store_true",
        help="a capture without supervisors: resume a paused round as soon as every device is healthy",
    )
    p.add_argument(
        "--camera",
        metavar="CAPTURE",
        help="sic bo: the camera's capture (its .jsonl; every frame is checked against its sha256)",
    )
    p.add_argument(
        "--reread-with",
        metavar="CALIBRATION",
        help="read the dice again from the saved frames with this reader calibration, instead of using "
        "the readings the table recorded",
    )
    p.add_argument("capture", help="raw device bytes, or JSON Lines {t, dir, data}")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser(
        "check-config",
        help="check a table's TOML file, device options, ports, data and capture paths: list every problem",
    )
    p.add_argument("config", nargs="?", metavar="CONFIG", help="the table's TOML file")
    p.add_argument("--config", dest="config_option", metavar="CONFIG", help=argparse.SUPPRESS)
    p.add_argument("--show", action="store_true", help="when it is clean, print the effective settings")
    p.set_defaults(func=cmd_check_config)

    if command in LEAN_COMMANDS:
        return parser
    from controller.schema import register as register_schema

    register_schema(sub)
    p = sub.add_parser(
        "panel-hash-pin",
        help="hash a dealer's PIN for [panel.dealers] (reads it from the terminal, or one line on stdin)",
    )
    p.set_defaults(func=cmd_panel_hash_pin)

    from controller.dice_cli import register as register_dice

    register_dice(sub)

    cal = sub.add_parser(
        "calibrate", help="calibration tools (wheel sensors, firing position, bias, dice camera)"
    )
    cal_sub = cal.add_subparsers(dest="calibration", required=True, metavar="TOOL")
    # each calibration tool (a library plus its CLI module) registers its own subcommands; the CLI modules
    # import their libraries (OpenCV for the dice) only when a command runs
    from calibration.bias_cli import register as register_bias
    from calibration.dice_cli import register as register_dice_calibration
    from calibration.wheel_cli import register as register_wheel

    register_wheel(cal_sub)
    register_bias(cal_sub)
    register_dice_calibration(cal_sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    command = next((word for word in words if not word.startswith("-")), None)
    parser = build_parser(None if {"-h", "--help"} & set(words[:1]) else command)
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from controller.config import ConfigError
    from controller.games import UnknownGame
    from drivers.registry import MissingExtra, UnknownProtocol

    try:
        result: int = args.func(args)
        return result
    except (OperatorError, ConfigError) as exc:
        print(f"tablectl: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (UnknownProtocol, UnknownGame, MissingExtra) as exc:
        print(f"tablectl: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    # `python -m controller.cli` runs this file as `__main__`, a second copy of the module: a command module
    # that imports `controller.cli.OperatorError` would raise a class this copy's `main` does not catch (a
    # traceback instead of one line). Run the real module's `main`.
    from controller.cli import main as real_main

    sys.exit(real_main())
