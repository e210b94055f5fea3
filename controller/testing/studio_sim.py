"""Many simulated tables on one MQTT connection, for the console's tests and its benchmark.

Each table publishes what a real `tablectl run` publishes (retained `status`, `state`, `devices/shoe` and
`result`, the events of card rounds with gap-free sequences, a retained state after each event), at a table's
pace: a round of 8 events every `round_seconds`, the tables' rounds spread over that time. The payloads have
the shapes of the real ones (a real table's state is the model), not their every field's meaning. The tables
play baccarat, or in turn each game of `games` (its state, title and result are that game's; its rounds are
dealt as baccarat's, four cards to two places).

`sent` records when each event was handed to the client (time.time()), for the latency benchmark.

Needs paho-mqtt (pyproject's `test` or `bench` extra).
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from controller.events import iso_ms

ROUND = [
    ("round.opened", None),
    ("round.betting_closed", None),
    ("card.dealt", ("player", 0)),
    ("card.dealt", ("banker", 0)),
    ("card.dealt", ("player", 1)),
    ("card.dealt", ("banker", 1)),
    ("round.result", None),
    ("round.closed", None),
]
CARDS = ["9S", "8D", "KC", "5H", "2C", "3D", "4H", "TS", "AS", "QD", "7C", "6H"]
#: the console's title of each game a simulated table may play
TITLES = {"baccarat": "Baccarat", "andar_bahar": "Andar Bahar"}


@dataclass
class SimTable:
    table_id: str
    offset: float  # where in the round cycle this table starts
    game: str = "baccarat"
    sequence: int = 0
    round_number: int = 0
    step: int = 0
    paused: dict[str, Any] | None = None
    shoe: str = "online"
    player: list[str] = field(default_factory=list)
    banker: list[str] = field(default_factory=list)
    next_at: float = 0.0
    frozen: bool = False  # publishes nothing (offline, or removed)
    #: readings held while paused, as the retained state lists them (`held`)
    held: list[dict[str, Any]] = field(default_factory=list)
    last_result: dict[str, Any] | None = None  # the envelope retained on `result`


class SimulatedStudio:
    def __init__(
        self,
        port: int,
        studio: str,
        count: int,
        *,
        round_seconds: float = 30.0,
        host: str = "127.0.0.1",
        seed: int = 5,
        prefix: str = "sim",
        games: tuple[str, ...] = ("baccarat",),
    ) -> None:
        self.studio = studio
        self.round_seconds = round_seconds
        self.rng = random.Random(seed)
        # each table somewhere in its round already, its next event within one event's gap: the studio's
        # pace from the first second
        self.tables = {}
        for n in range(1, count + 1):
            offset = self.rng.uniform(0, round_seconds / len(ROUND))
            table = SimTable(f"{prefix}-{n:03d}", offset=offset, game=games[(n - 1) % len(games)])
            table.step = self.rng.randrange(len(ROUND))
            table.round_number = 1 if table.step else 0
            self.tables[table.table_id] = table
        self.sent: dict[tuple[str, int], float] = {}
        self.published = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._client = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id=f"sim-{seed}")
        self._client.max_queued_messages_set(0)
        self._client.reconnect_delay_set(min_delay=1, max_delay=1)
        self._host, self._port = host, port
        self.running = False
        self._last_sent: paho.MQTTMessageInfo | None = None

    def root(self, table_id: str) -> str:
        return f"studio/{self.studio}/table/{table_id}"

    # --- lifecycle -----------------------------------------------------------------------------------

    def start(self, *, events: bool = True) -> None:
        connected = threading.Event()

        def on_connect(*args: Any) -> None:
            if connected.is_set():  # a reconnection: every table says it is there again, as a table does
                with self._lock:
                    for table in self.tables.values():
                        if not table.frozen:
                            self._publish_retained(table)
            connected.set()

        self._client.on_connect = on_connect
        self._client.connect(self._host, self._port, keepalive=10)
        self._client.loop_start()
        if not connected.wait(10):
            raise RuntimeError("the simulated studio could not connect")
        start = time.monotonic()
        with self._lock:
            for table in self.tables.values():
                self._publish_retained(table)
                table.next_at = start + table.offset
        if events:
            self.running = True
            self._thread = threading.Thread(target=self._run, name="simulated-studio", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._client.disconnect()
        self._client.loop_stop()

    def quiet(self) -> None:
        """The tables stop playing; what they retained stays on the broker, and the tests' faults still
        publish. What a console shows of them then comes from the broker's retained messages."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            wake = now + 0.5
            with self._lock:
                for table in self.tables.values():
                    if table.frozen or table.paused is not None:
                        continue
                    if table.next_at <= now:
                        self._next_event(table)
                        table.next_at += self.round_seconds / len(ROUND)
                    wake = min(wake, table.next_at)
            self._stop.wait(max(0.0, wake - time.monotonic()))

    # --- what a table publishes ----------------------------------------------------------------------

    def _publish(self, topic: str, payload: dict[str, Any] | bytes, retain: bool = False) -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":"))
        self._last_sent = self._client.publish(topic, body, qos=1, retain=retain)
        self.published += 1

    def _publish_retained(self, table: SimTable) -> None:
        root = self.root(table.table_id)
        self._publish(f"{root}/status", {"status": "online", "boot": 1, "since": iso_ms(time.time())}, True)
        self._publish(f"{root}/devices/shoe", self._device(table), True)
        self._publish(f"{root}/state", self._state(table), True)
        if table.last_result is not None:
            self._publish(f"{root}/result", table.last_result, True)

    def _device(self, table: SimTable) -> dict[str, Any]:
        detail = "online" if table.shoe == "online" else "link lost"
        return {
            "status": table.shoe,
            "detail": detail,
            "code": None,
            "since": iso_ms(time.time()),
            "state": None,
        }

    def _round_id(self, table: SimTable) -> str:
        return f"{table.table_id}-{table.round_number:06d}"

    def _state(self, table: SimTable) -> dict[str, Any]:
        phases = [
            "betting_open",
            "betting_closed",
            "in_play",
            "in_play",
            "in_play",
            "in_play",
            "waiting",
            "waiting",
        ]
        phase = phases[(table.step - 1) % len(ROUND)] if table.round_number else "waiting"
        in_round = phase != "waiting"
        pause = table.paused
        return {
            "table_id": table.table_id,
            "game": table.game,
            "phase": "paused" if pause else phase,
            "round_phase": phase,
            "round_id": self._round_id(table) if in_round else None,
            "round_number_in_shoe": table.round_number if in_round else None,
            "paused": pause is not None,
            "pause": pause,
            "waiting_for_devices": [],
            "held_readings": len(table.held),
            "held": table.held,
            "prompt": f"PAUSED: {pause['reason']} — call the supervisor" if pause else "Deal to Player",
            "devices": {"shoe": self._device(table)},
            "game_state": {
                "game": table.game,
                "positions": [
                    {
                        "name": "player",
                        "label": "Player",
                        "cards": table.player,
                        "next": False,
                        "total": None,
                    },
                    {
                        "name": "banker",
                        "label": "Banker",
                        "cards": table.banker,
                        "next": False,
                        "total": None,
                    },
                ],
                "round_id": self._round_id(table) if in_round else None,
            },
            "rejected": {},
            "last_sequence": table.sequence,
            "view": {"title": TITLES.get(table.game, table.game), "usual_cards": 3, "usual_cards_at": {}},
        }

    def _event(self, table: SimTable, type_: str, data: dict[str, Any], subject: str | None) -> None:
        table.sequence += 1
        now = time.time()
        envelope = {
            "specversion": "1.0",
            "id": uuid.uuid4().hex,
            "source": self.root(table.table_id),
            "type": type_,
            "time": iso_ms(now),
            "recordedtime": iso_ms(now),
            "sequence": str(table.sequence).zfill(12),
            "subject": subject,
            "historical": False,
            "data": data,
        }
        self.sent[(table.table_id, table.sequence)] = now
        self._publish(f"{self.root(table.table_id)}/events/{type_}", envelope)
        if type_ == "round.result":  # as a table does: its last result, retained
            table.last_result = envelope
            self._publish(f"{self.root(table.table_id)}/result", envelope, True)

    def _next_event(self, table: SimTable) -> None:
        type_, where = ROUND[table.step % len(ROUND)]
        if type_ == "round.opened":
            table.round_number += 1
            table.player, table.banker = [], []
        table.step += 1
        round_id = self._round_id(table)
        if type_ == "round.opened":
            data: dict[str, Any] = {"game": table.game, "round_id": round_id, "round_number_in_shoe": 1}
        elif type_ == "card.dealt":
            assert where is not None
            card = self.rng.choice(CARDS)
            (table.player if where[0] == "player" else table.banker).append(card)
            data = {"round_id": round_id, "card": card, "position": where[0], "index": where[1]}
        elif type_ == "round.result" and table.game == "andar_bahar":
            data = {
                "game": "andar_bahar",
                "round_id": round_id,
                # a round the simulation joined half-way has fewer cards: its game card is made up
                "game_card": (table.player or ["AS"])[0],
                "andar": table.banker,
                "bahar": table.player[1:],
                "winner": "andar",
                "cards_dealt": len(table.player) + len(table.banker) - 1,
                "bucket": "1-5",
                "first_three": None,
            }
        elif type_ == "round.result":
            data = {
                "game": "baccarat",
                "round_id": round_id,
                "player": {"cards": table.player, "total": 5},
                "banker": {"cards": table.banker, "total": 3},
                "winner": "player",
                "player_pair": False,
                "banker_pair": False,
                "natural": False,
                "player_natural": False,
                "banker_natural": False,
                "round_number_in_shoe": table.round_number,
                "last_round_of_shoe": False,
            }
        elif type_ == "round.betting_closed":
            data = {"round_id": round_id, "reason": "timer"}
        else:
            data = {"round_id": round_id}
        self._event(table, type_, data, round_id)
        self._publish(f"{self.root(table.table_id)}/state", self._state(table), True)

    # --- what tests do to tables ---------------------------------------------------------------------

    def pause(self, table_id: str, reason: str = "shoe offline: link lost") -> None:
        with self._lock:
            table = self.tables[table_id]
            table.paused = {
                "reason": reason,
                "by": "device",
                "device": "shoe",
                "cause": "device",
                "since": iso_ms(time.time()),
            }
            table.shoe = "offline"
            data = {
                "round_id": self._round_id(table),
                "reason": reason,
                "device": "shoe",
                "by": "device",
                "cause": "device",
            }
            self._event(table, "round.paused", data, self._round_id(table))
            self._publish(f"{self.root(table_id)}/devices/shoe", self._device(table), True)
            self._publish(f"{self.root(table_id)}/state", self._state(table), True)

    def hold(self, table_id: str, *readings: dict[str, Any]) -> None:
        """A paused table holds readings for the resume (`{"device", "reading", "card", "raw"}` each)."""
        with self._lock:
            table = self.tables[table_id]
            table.held.extend(readings)
            self._publish(f"{self.root(table_id)}/state", self._state(table), True)

    def publish_result(self, table_id: str, data: dict[str, Any]) -> None:
        """A round's result as given (`data` of `round.result`, with its `round_id`): its event and its
        retained copy, as a table publishes them."""
        with self._lock:
            table = self.tables[table_id]
            self._event(table, "round.result", data, data["round_id"])

    def go_offline(self, table_id: str) -> None:
        """What a table's Last Will says."""
        with self._lock:
            self.tables[table_id].frozen = True
            self._publish(f"{self.root(table_id)}/status", {"status": "offline", "boot": 1}, True)

    def set_status(self, table_id: str, **extra: Any) -> None:
        """The retained status with more in it (`delivery`, `disk`, ...)."""
        with self._lock:
            status = {"status": "online", "boot": 1, "since": iso_ms(time.time()), **extra}
            self._publish(f"{self.root(table_id)}/status", status, True)

    def forget(self, table_id: str) -> None:
        """A table that stops publishing without clearing anything (gone while the broker was away)."""
        with self._lock:
            self.tables.pop(table_id).frozen = True

    def wait_delivered(self, timeout: float = 10.0) -> None:
        """Wait until the broker has acknowledged all published so far (QoS 1 is acknowledged in order).

        The client keeps a message it could not deliver and sends it after it reconnects: a table that went
        away while the broker was down must have nothing left in that queue, or it would come back.
        """
        with self._lock:
            last = self._last_sent
        if last is not None:
            last.wait_for_publish(timeout)
            if not last.is_published():
                raise TimeoutError("the broker did not acknowledge the studio's messages")

    def remove(self, table_id: str) -> None:
        """A table taken out of service: its retained topics cleared."""
        with self._lock:
            table = self.tables.pop(table_id)
            table.frozen = True
            for level in ("status", "state", "devices/shoe", "result"):
                self._publish(f"{self.root(table_id)}/{level}", b"", True)

    def add(self, table_id: str) -> None:
        with self._lock:
            table = SimTable(table_id, offset=0.0, next_at=time.monotonic())
            self.tables[table_id] = table
            self._publish_retained(table)
