"""`tablectl demo`: a whole simulated table on this machine.

A device simulator speaking the real bytes on a pseudo-terminal, the real service reading it, an embedded
MQTT broker (amqtt, demo only) unless `--mqtt-url` is given, and a virtual dealer who follows the prompts.
What is printed is what an MQTT subscriber receives on `<root>/events/#`, so the demo shows the contract
itself, not an internal shortcut.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

import aiomqtt

from controller.commands import CommandError, NewShoe, Resume
from controller.config import TableConfig
from controller.events import Envelope
from controller.games import GAMES, game_spec
from controller.games.spec import DemoPlayers
from controller.service import Part, TableService
from controller.table_build import TABLE_CONFIGS
from drivers.registry import MissingExtra, Protocol, SimulatorSettings, is_camera, protocol
from drivers.shoe.simulator import DEFAULT_CUT_POSITION

log = logging.getLogger(__name__)

#: the demo's camera: a synthetic source drawing the dice the simulated shaker rolled, read with the
#: calibration fitted to that drawing; it skips a frame after AT_REST (one exposed before it is not the rest)
DEMO_CAMERA_OPTIONS: dict[str, Any] = {"fps": 15, "grab_skip_frames": 1}
#: how often the demo's dice come to rest cocked, touching or stacked (then they are shaken again)
DEMO_ANOMALY_RATE = 0.35


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


#: the embedded broker's package is the demo extra's (with OpenCV, for sic bo's camera)
DEMO_NEEDS = "the demo's broker needs amqtt: pip install 'tablectl[demo]' (or give --mqtt-url)"


def check_demo_extras(game: str, *, embedded_broker: bool) -> None:
    """MissingExtra, in one line, if the demo of `game` needs a package that is not installed: the embedded
    broker's (amqtt), a camera's (OpenCV)."""
    if embedded_broker:
        try:
            import amqtt  # noqa: F401
        except ImportError:
            raise MissingExtra(DEMO_NEEDS) from None
    for protocols in game_spec(game).devices.values():
        if is_camera(protocols[0]):
            protocol(protocols[0])


async def start_embedded_broker(port: int) -> Any:
    """amqtt, only for the demo: a real studio runs Mosquitto or another production broker."""
    from amqtt.broker import Broker

    for name in ("amqtt", "transitions"):
        logging.getLogger(name).setLevel(logging.ERROR)
    broker = Broker(
        {
            "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}"}},
            # the plugins named, none loaded from entry points (deprecated in amqtt 0.12): anonymous clients,
            # no $SYS topics, no topic checks
            "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}},
        }
    )
    await broker.start()
    return broker


def demo_uses_shuffler(game: str) -> bool:
    """The fresh-deck games (a deck per round) play with the simulated shuffler, as their tables do."""
    spec = game_spec(game)
    return spec.fresh_deck_each_round and "shuffler" in spec.optional_devices


def make_shuffler() -> Any:
    return demo_simulator(protocol("shuffler-line"), SimulatorSettings())


def demo_simulator(record: Protocol, settings: SimulatorSettings, *, faults: bool = False) -> Any:
    """A protocol's simulator as the demo runs it: at the demo's speed, with the demo's faults if on."""
    simulated = record.simulated
    if simulated is None:
        raise ValueError(f"no demo simulator for {record.name}")
    demo_faults = simulated.demo_faults(settings.seed) if faults and simulated.demo_faults else None
    return simulated.make(replace(settings, speed=simulated.demo_speed, faults=demo_faults))


def make_simulator(game: str, seed: int, faults: bool) -> Any:
    spec = game_spec(game)
    # a pack that is replaced every round has no cut card
    cut_position = None if spec.fresh_deck_each_round else spec.demo.cut_position or DEFAULT_CUT_POSITION
    settings = SimulatorSettings(seed=seed, decks=spec.demo.decks, cut_position=cut_position)
    return demo_simulator(protocol(next(iter(spec.devices.values()))[0]), settings, faults=faults)


def demo_cameras(game: str, data_dir: Path) -> dict[str, dict[str, Any]]:
    """The camera devices of a game's demo table (sic bo's dice camera), as config entries."""
    spec = game_spec(game)
    if not any(is_camera(protocols[0]) for protocols in spec.devices.values()):
        return {}
    from drivers.dice.shaker_scene import CALIBRATION_FILE

    return {
        name: {
            "protocol": protocols[0],
            "port": "synthetic",
            "capture": str(data_dir / "captures" / f"{name}.jsonl"),
            "options": {**DEMO_CAMERA_OPTIONS, "dice_calibration": str(CALIBRATION_FILE)},
        }
        for name, protocols in spec.devices.items()
        if is_camera(protocols[0])
    }


def attach_dice_scene(service: TableService, shaker: Any, seed: int) -> None:
    """Point the demo's cameras at the dice the simulated shaker rolled (random layouts, now and then a
    cocked, touching or stacked die, so that re-shakes happen)."""
    if not service.cameras:
        return  # no camera, no OpenCV: a card or wheel demo runs on a plain install with amqtt
    from drivers.camera import SyntheticSource
    from drivers.dice.shaker_scene import ShakerScene

    def truth() -> tuple[str, tuple[int, ...] | None]:
        cycles = shaker.cycles
        if not cycles:
            return "none", None
        last = cycles[-1]
        return last.cycle_id, last.dice if last.outcome == "at_rest" else None

    for camera in service.cameras.values():
        source = SyntheticSource(
            renderer=ShakerScene(truth, seed=seed, anomaly_rate=DEMO_ANOMALY_RATE),
            fps=DEMO_CAMERA_OPTIONS["fps"],
            seed=seed,
        )
        camera.source_factory = lambda source=source: source


#: the identity the demo's dealer acts under (the panel's dealer of the demo table)
DEMO_DEALER = "demo"


class VirtualDealer:
    """Follows the table's prompts like a dealer at the table would: draws when a card is wanted, and moves
    the cards between the table, the shuffler and the shoe."""

    def __init__(self, service: TableService, simulator: Any, seed: int, shuffler: Any = None) -> None:
        self.service = service
        self.simulator = simulator
        self.shuffler = shuffler
        self.rng = random.Random(seed)
        self.spec = game_spec(service.config.table.game)
        if shuffler is not None:
            # the first deck goes through the shuffler too: the table counts every deck it deals
            shuffler.load_decks(self.spec.demo.decks)
            service.listeners.append(self._through_the_shuffler)
        elif self.spec.fresh_deck_each_round:
            service.listeners.append(self._fresh_deck_after_round)
        else:
            service.listeners.append(self._new_shoe_after_the_last_round)
        #: the finished shoe the dealer has replaced but not yet told the table of (`new_shoe`)
        self._shoe_to_announce: str | None = None

    def _fresh_deck_after_round(self, envelope: Envelope) -> None:
        """Single-deck games: the used pack goes to the shuffler and a freshly shuffled one is loaded."""
        if envelope.type in ("round.closed", "round.voided"):
            self._load_the_shoe()

    def _through_the_shuffler(self, envelope: Envelope) -> None:
        """With a shuffler: the used cards go into it as the round ends (before the table asks for the
        shuffle, after the round gap), and the shuffled deck goes from its output tray into the shoe."""
        if envelope.type in ("round.closed", "round.voided"):
            self.shuffler.load_decks(self.spec.demo.decks)
        elif envelope.type == "shuffle.done":
            self.shuffler.take_output()
            self._load_the_shoe()

    def _load_the_shoe(self) -> None:
        self.simulator.load_new_deck(self.rng.randrange(2**32), decks=self.spec.demo.decks)

    def _new_shoe_after_the_last_round(self, envelope: Envelope) -> None:
        """A shoe game: after the cut-card round the decks are reshuffled into a new shoe."""
        if envelope.type == "round.result" and envelope.data.get("last_round_of_shoe"):
            cut = self.spec.demo.cut_position or DEFAULT_CUT_POSITION
            self.simulator.load_new_deck(
                self.rng.randrange(2**32), decks=self.spec.demo.decks, cut_position=cut
            )
            if not getattr(self.service.core.flow.settings, "auto_new_shoe", True):
                # a table that waits for the dealer's word (Live Blackjack): the dealer says so once the
                # round is over, as on the panel; before, the demo waited for it forever at the shoe's end
                self._shoe_to_announce = self.service.core.state()["game_state"].get("shoe_id")

    async def _announce_the_new_shoe(self, state: dict[str, Any]) -> None:
        game_state = state["game_state"]
        if game_state.get("shoe_id") != self._shoe_to_announce:
            self._shoe_to_announce = None  # a new shoe started already
            return
        if not game_state.get("shoe_finished"):
            return  # the shoe's last round is still being played
        try:
            await self.service.handle_command(NewShoe(by=DEMO_DEALER))
        except CommandError as exc:
            log.warning("demo: the dealer cannot load the new shoe yet: %s", exc)
        else:
            self._shoe_to_announce = None

    @property
    def has_work(self) -> bool:
        """Whether the game needs a dealer's hands: the wheel and the shaker do not, the table starts each
        game itself."""
        return "shoe" in self.spec.devices

    async def run(self) -> None:
        if not self.has_work:
            return
        while True:
            await asyncio.sleep(0.15 + self.rng.random() * 0.25)
            state = self.service.core.state()
            game_state = state["game_state"]
            if state["paused"] or state["waiting_for_devices"]:
                continue
            if self._shoe_to_announce is not None:
                await self._announce_the_new_shoe(state)
                continue
            if self.simulator.device.queued:
                # the last card is still on its way (not yet acknowledged, so not yet in the table's state):
                # a dealer waits for the shoe to hand it over before reading the prompt again; drawing now
                # would send a second card for a place the first one already filled
                continue
            if game_state.get("awaiting_rescan"):
                self.simulator.rescan()
            # "waiting": a card that comes before the round opens (Andar Bahar's game card)
            elif state["round_phase"] in ("waiting", "betting_closed", "in_play") and game_state.get(
                "next_position"
            ):
                self.simulator.draw()


#: the demo's supervisor resumes a pause the table made itself this long after it began (or after the last
#: refused resume): long enough to see the pause on the panel, short enough that the demo goes on
DEMO_RESUME_AFTER_SECONDS = 3.0
#: who a pause the table made itself is by: a device's fault, or the runtime/flow ("system")
TABLE_MADE_PAUSES = ("device", "system")
#: the identity the demo's supervisor acts under (a supervisor's user name, as on a real broker)
DEMO_SUPERVISOR = "demo-supervisor"


class VirtualSupervisor:
    """Resumes a round the table paused by itself (a device that went offline, dice that stayed unreadable)
    as a studio's supervisor would after a look, and says so on the log. A pause a person made stays for
    that person. Without it any such pause (a device's link dropping for a moment) left the demo waiting
    forever."""

    def __init__(
        self,
        service: TableService,
        *,
        after: float = DEMO_RESUME_AFTER_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.service = service
        self.after = after
        self.clock = clock
        self._since: float | None = None

    async def run(self) -> None:
        while True:
            await asyncio.sleep(0.25)
            await self.look()

    async def look(self) -> None:
        pause = self.service.core.state()["pause"]
        if pause is None or pause["by"] not in TABLE_MADE_PAUSES:
            self._since = None
            return
        now = self.clock()
        if self._since is None:
            self._since = now
            log.warning(
                "demo: the table paused (%s); the demo's supervisor resumes it in %.0f s",
                pause["reason"],
                self.after,
            )
            return
        if now - self._since < self.after:
            return
        try:
            await self.service.handle_command(Resume(by=DEMO_SUPERVISOR))
        except CommandError as exc:
            self._since = now  # e.g. the device is still offline: look again later
            log.warning("demo: the supervisor cannot resume yet: %s", exc)
        else:
            self._since = None
            log.warning("demo: the supervisor resumed the table (it paused: %s)", pause["reason"])


#: the identity the demo's players send their inputs under (the topic's last level, as a rules engine's)
DEMO_PLAYERS = "demo-players"


class VirtualPlayers:
    """The demo's stand-in for the rules engine: it sends what the game's `demo_players` says the players
    do now (Live Blackjack's seated boxes, decisions, insurance) over MQTT, on `<root>/inputs/<name>/<user>`,
    exactly as a rules engine does, after a player's moment of thought. Each thing is said once a round."""

    def __init__(self, service: TableService, players: DemoPlayers, seed: int) -> None:
        self.service = service
        self.players = players
        self.rng = random.Random(seed)
        self.round_id: str | None = None
        self.said: set[str] = set()  # this round's keys (a demo may run for days: not every round's)

    async def run(self, host: str, port: int) -> None:
        root = self.service.config.topic_root
        async with aiomqtt.Client(host, port, identifier=f"demo-players-{root}") as client:
            while True:
                await asyncio.sleep(0.1)
                state = self.service.core.state()
                if state["round_id"] != self.round_id:
                    self.round_id, self.said = state["round_id"], set()
                for key, name, payload in self.players(state, self.rng):
                    if key in self.said:
                        continue
                    self.said.add(key)
                    await asyncio.sleep(0.1 + self.rng.random() * 0.3)  # thinking
                    await client.publish(f"{root}/inputs/{name}/{DEMO_PLAYERS}", json.dumps(payload), qos=1)


@dataclass(frozen=True)
class DemoTable:
    """What a demo runs, for a caller's `on_ready` (tests inject faults through the simulators)."""

    service: TableService
    simulator: Any
    shuffler: Any
    supervisor: VirtualSupervisor | None


@dataclass
class DemoTally:
    """What a demo published, counted for its last line."""

    started: float
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def summary(self, now: float) -> str:
        count = self.counts.get
        return (
            f"demo over after {now - self.started:.0f} s: {count('round.closed', 0)} round(s) played, "
            f"{count('round.result', 0)} result(s), {count('round.voided', 0)} voided, "
            f"{count('round.paused', 0)} pause(s), {count('card.rejected', 0)} card(s) refused, "
            f"{sum(self.counts.values())} event(s) in all"
        )


#: the narrator looks at the table's prompt this often, and says it once nothing was printed for QUIET_SECONDS
NARRATE_EVERY_SECONDS = 0.25
QUIET_SECONDS = 0.75


@dataclass
class Narrator:
    """When the demo says what the table waits for: its prompt, once per prompt, only after a quiet spell
    (a prompt that changes with every card is not repeated between the cards' own lines)."""

    said: str | None = None
    last_printed: float = 0.0

    def event_printed(self, now: float) -> None:
        self.last_printed = now

    def line(self, prompt: str, now: float) -> str | None:
        if not prompt or prompt == self.said or now - self.last_printed < QUIET_SECONDS:
            return None
        self.said = prompt
        self.last_printed = now
        return f"{'':6} {'':12} {'(table waits)':<20} {prompt}"


def describe(envelope: dict[str, Any]) -> str:
    data = envelope["data"]
    kind = envelope["type"]
    if kind == "round.result" and data.get("game") in GAMES:
        return GAMES[data["game"]].describe(data)
    if kind == "dice.read":
        read = " ".join(map(str, data["values"])) if data["values"] else f"refused: {data['reason']}"
        return f"shake {data['cycle_id']}: {read} (frame {data['frame'].rsplit('/', 1)[-1] or 'none'})"
    if kind == "card.dealt":
        return f"{data['card']} to {data['position']}{' (re-scan)' if data.get('rescan') else ''}"
    if kind == "shuffle.done":
        # not the device's protocol line (`raw`): what it means
        return (
            f"{data.get('decks')} deck(s), {data.get('cards')} cards shuffled by {data.get('device')} "
            f"(shuffle {data.get('shuffle_id')}): the next deck is ready"
        )
    skip = {"round_id"}
    return ", ".join(f"{k}={v}" for k, v in data.items() if k not in skip and v not in (None, "", False))


async def run_demo(
    game: str,
    rounds: int,
    *,
    as_json: bool,
    mqtt_url: str | None,
    seed: int = 7,
    faults: bool = True,
    out: TextIO = sys.stdout,
    panel_port: int | None = None,
    supervisor: bool = True,
    on_ready: Callable[[DemoTable], None] | None = None,
    studio_id: str = "demo",
    table_id: str | None = None,
) -> int:
    spec = game_spec(game)
    check_demo_extras(game, embedded_broker=mqtt_url is None)
    with tempfile.TemporaryDirectory(prefix="tablectl-demo-") as tmp:
        broker = None
        if mqtt_url is None:
            port = free_port()
            broker = await start_embedded_broker(port)
            mqtt_url = f"mqtt://127.0.0.1:{port}"
        simulator = make_simulator(game, seed, faults)
        device_name = next(iter(spec.devices))
        port_path = await simulator.start_pty(str(Path(tmp) / f"{device_name}.pty"))
        devices = {
            device_name: {"protocol": spec.devices[device_name][0], "port": port_path},
            **demo_cameras(game, Path(tmp)),
        }
        game_settings = dict(spec.demo.settings)
        shuffler = None
        if demo_uses_shuffler(game):
            shuffler = make_shuffler()
            shuffler_port = await shuffler.start_pty(str(Path(tmp) / "shuffler.pty"))
            devices["shuffler"] = {"protocol": "shuffler-line", "port": shuffler_port}
            game_settings["shuffler_device"] = "shuffler"
        config: TableConfig = TABLE_CONFIGS.from_dict(
            {
                "table": {
                    "studio_id": studio_id,
                    "table_id": table_id or f"demo-{game}",
                    "game": game,
                    "data_dir": tmp,
                },
                "broker": {"url": mqtt_url, "protocol": "3.1.1" if broker is not None else "5"},
                "devices": devices,
                "game": game_settings,
            },
            environ={},
            source="demo",
        )
        # The embedded broker has no ACL: it refuses nothing, so MQTT 3.1.1's silent refusals cannot happen
        # (a broker given with --mqtt-url may refuse, and is spoken to over MQTT 5).
        service = TableService(config, broker_may_refuse=broker is None)
        attach_dice_scene(service, simulator, seed)
        dealer = VirtualDealer(service, simulator, seed, shuffler)
        overseer = VirtualSupervisor(service) if supervisor else None
        players_of_game = spec.demo.players
        players = None if players_of_game is None else VirtualPlayers(service, players_of_game, seed)
        if on_ready is not None:
            on_ready(DemoTable(service, simulator, shuffler, overseer))
        # what the demo runs with the table (`TableService.run`'s parts): each ends the demo when it ends (the
        # watcher, after the last round) or fails (a virtual dealer, supervisor or player that raised: before,
        # a dealer that raised left the table waiting for a card forever)
        parts: dict[str, Part] = {}
        if panel_port is not None:
            from controller.panel import PanelError, serve_panel

            if not port_is_free(panel_port):
                panel_port = free_port()
            from controller.config import PanelSettings
            from controller.pins import hash_pin

            # the demo's own dealer: its PIN is printed, the demo table is nobody's
            settings = PanelSettings(port=panel_port, dealers={"demo": hash_pin("0000")})

            async def serve_demo_panel() -> None:
                try:
                    await serve_panel(service, settings)
                except PanelError as exc:
                    # another demo took the port between the look and the bind: this one goes on without
                    # its panel, as it always did (uvicorn has said why)
                    log.info("demo: %s", exc)
                    await asyncio.Event().wait()

            parts["panel"] = serve_demo_panel
            print(
                f"dealer panel: http://127.0.0.1:{panel_port}/ (sign in as dealer demo, PIN 0000)",
                file=sys.stderr,
                flush=True,
            )
        done = asyncio.Event()
        host, _, port_s = mqtt_url.split("://", 1)[1].partition(":")

        tally = DemoTally(started=time.monotonic())
        narrator = Narrator()

        async def narrate() -> None:
            """Human output: what the table waits for when it waits a while with nothing published (stud's
            players deciding, a betting window): the gap is said, not silent."""
            while True:
                await asyncio.sleep(NARRATE_EVERY_SECONDS)
                line = narrator.line(service.core.state()["prompt"], time.monotonic())
                if line is not None:
                    print(line, file=out, flush=True)

        async def watch() -> None:
            closed = 0
            async with aiomqtt.Client(
                host,
                int(port_s or 1883),
                identifier=f"demo-watch-{config.table.studio_id}-{config.table.table_id}-{seed}",
            ) as client:
                await client.subscribe(f"{config.topic_root}/events/#", qos=1)
                subscribed.set()
                async for message in client.messages:
                    payload = message.payload
                    text = payload.decode() if isinstance(payload, bytes | bytearray) else str(payload)
                    envelope = json.loads(text)
                    if as_json:
                        print(text, file=out, flush=True)
                    else:
                        print(
                            f"{envelope['sequence'][-6:]} {envelope['time'][11:23]} {envelope['type']:<20} "
                            f"{describe(envelope)}",
                            file=out,
                            flush=True,
                        )
                        narrator.event_printed(time.monotonic())
                    tally.add(envelope["type"])
                    if envelope["type"] in ("round.closed", "round.voided"):
                        closed += 1
                        if rounds and closed >= rounds:
                            done.set()
                            return

        subscribed = asyncio.Event()
        # subscribed before the table starts, so that it prints every event; then the table's run owns it
        watcher = asyncio.create_task(watch(), name="the event watcher")
        parts["the event watcher"] = lambda: watcher
        if not as_json:
            parts["the narrator"] = narrate
        if dealer.has_work:
            parts["the virtual dealer"] = dealer.run
        if overseer is not None:
            parts["the virtual supervisor"] = overseer.run
        if players is not None:
            parts["the players"] = lambda: players.run(host, int(port_s or 1883))
        table: asyncio.Task[None] | None = None
        try:
            await asyncio.wait_for(subscribed.wait(), 10)
            table = asyncio.create_task(service.run(parts=parts), name="the table")
            await table
        finally:
            # stop in dependency order, also on Ctrl-C: the table first (its own tasks, its bus saying
            # offline, then its parts: the panel, the watcher, the dealer, ...), then the simulated devices
            # and the broker they talk to
            if table is not None:
                service.stop()
                await _bounded("the table's stop", table)
            else:  # it never started: the watcher is still the demo's
                watcher.cancel()
                await _bounded(f"{watcher.get_name()}'s stop", watcher)
            await _bounded("the simulated device's stop", simulator.stop())
            if shuffler is not None:
                await _bounded("the simulated shuffler's stop", shuffler.stop())
            if broker is not None:
                await _bounded("the embedded broker's shutdown", broker.shutdown())
            # one line at the end, also after Ctrl-C; with --json on stderr, so stdout stays envelopes only
            print(tally.summary(time.monotonic()), file=sys.stderr if as_json else out, flush=True)
    return 0 if done.is_set() else 1


#: how long the demo waits for one part to stop before it leaves it behind
STOP_TIMEOUT_SECONDS = 10.0


async def _bounded(what: str, stopping: Awaitable[Any]) -> None:
    """A part that does not stop in time is cancelled and left behind with a warning: the demo's result is
    already known, and a demo that never exits helps nobody. (Before, the broker's shutdown and the
    simulators' stop had no limit at all.) Not `wait_for`: it waits for the cancelled part to finish
    cancelling. A part that ignored cancellation altogether would still hold up `asyncio.run`'s own exit,
    which waits for every task; no such part is known. An error the part ended with was reported where it
    mattered (a failed part ends the demo with it) or is the part being stopped under its feet."""
    task = asyncio.ensure_future(stopping)
    finished, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT_SECONDS)
    if not finished:
        task.cancel()
        log.warning("demo: %s took over %.0f s; leaving it", what, STOP_TIMEOUT_SECONDS)
    elif not task.cancelled():
        task.exception()  # retrieved: not "never retrieved" at exit
