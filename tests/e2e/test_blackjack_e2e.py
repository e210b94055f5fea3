"""The hole card through the whole service: `tablectl run` in its own process (Single-deck Blackjack), a
simulated shoe on a real pty dealing a scripted deck, a real Mosquitto, the dealer's panel enabled. The
service is killed with kill -9 between the deal of the face-down card and its reveal, restarted, resumed, and
the round completed by the rules engine's `stand`. Until that `stand` was sent, no published MQTT byte
(events, retained state and devices, replies), no line of the service's log and no byte of the panel's
live stream names the card; the journal's state row keeps it (that is how the round survived the kill)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
from pathlib import Path

import httpx
import pytest

from controller.pins import hash_pin
from controller.testing.blackjack_reference import names_card
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, free_port, wait_until
from controller.testing.table_process import ServiceProcess, write_table_config
from drivers.shoe.simulator import ShoeSimulator

pytestmark = pytest.mark.e2e

TABLE = "bj-e2e"
BASE = f"studio/s1/table/{TABLE}"
HOLE = "KC"
# player 9S 5D (14), dealer 7H and KC face down; after the stand the dealer has a hard 17 and stands
CARDS = ["9S", "7H", "5D", HOLE, "2H", "3H", "4H", "6H"]


def write_config(tmp_path: Path, broker: MosquittoBroker, port: str, panel_port: int) -> Path:
    return write_table_config(
        tmp_path,
        broker,
        table_id=TABLE,
        game="single_deck_blackjack",
        device="shoe",
        protocol="shoe-line",
        port=port,
        game_settings="\n".join(
            [
                "betting_seconds = 1.0",
                "round_gap_seconds = 0.5",
                "decision_seconds = 600",
                "insurance_seconds = 600",
            ]
        ),
        extra=f'''
[panel]
enabled = true
port = {panel_port}

[panel.dealers]
d7 = "{hash_pin("2468", log2_n=10)}"
''',
    )


async def watch_stream(port: int, into: bytearray, stop: asyncio.Event) -> None:
    """Read the panel's live stream as the signed-in dealer (signing in again and reconnecting across the
    restart: a new boot has a new page token and no sessions) until `stop`."""
    url = f"http://127.0.0.1:{port}"
    while not stop.is_set():
        try:
            async with httpx.AsyncClient(base_url=url, timeout=None) as client:
                page = await client.get("/")
                token = re.search(r'<meta name="panel-token" content="([^"]+)">', page.text)
                assert token is not None, page.text
                headers = {"origin": url, "x-panel-token": token.group(1)}
                signed = await client.post(
                    "/api/session", json={"dealer": "d7", "pin": "2468"}, headers=headers
                )
                if signed.status_code != 200:
                    raise httpx.HTTPError(f"sign-in: {signed.status_code}")
                async with client.stream("GET", "/api/stream") as reply:
                    if reply.status_code != 200:
                        raise httpx.HTTPError(f"stream: {reply.status_code}")
                    async for chunk in reply.aiter_bytes():
                        if stop.is_set():
                            return
                        into.extend(chunk)
        except httpx.HTTPError:
            await asyncio.sleep(0.1)


async def test_the_hole_card_survives_a_kill_9_and_is_never_shown_before_its_reveal(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    shoe = ShoeSimulator(cards=CARDS, cut_position=None)
    await shoe.start_pty(str(tmp_path / "shoe.pty"))
    panel_port = free_port()
    config = write_config(tmp_path, mosquitto, str(tmp_path / "shoe.pty"), panel_port)
    log = tmp_path / "service.log"
    service = ServiceProcess(config, log)
    streamed = bytearray()
    stop_stream = asyncio.Event()
    stream = asyncio.create_task(watch_stream(panel_port, streamed, stop_stream))
    try:
        async with MqttRecorder(mosquitto, [f"{BASE}/#"], client_id="bj-watch", persistent=True) as watch:
            service.start()
            await watch.wait_for_message(
                f"{BASE}/status", lambda m: m.json()["status"] == "online", timeout=15
            )
            await watch.wait_for_count(f"{BASE}/events/round.betting_closed", 1, timeout=15)

            def cards_out() -> int:
                return len(watch.on(f"{BASE}/events/card.dealt")) + len(
                    watch.on(f"{BASE}/events/card.face_down")
                )

            for _ in range(4):
                before = cards_out()
                await wait_until(shoe.draw, timeout=10, what="the shoe's gate to open for a draw")
                await wait_until(lambda: cards_out() > before, timeout=10, what="the card's event")  # noqa: B023
            face_down = watch.on(f"{BASE}/events/card.face_down")
            assert len(face_down) == 1 and face_down[0].json()["data"]["index"] == 1
            await asyncio.sleep(
                0.5
            )  # the shoe has its acknowledgement: nothing is retransmitted after the kill

            service.kill9()
            with sqlite3.connect(tmp_path / "data" / f"{TABLE}-journal.sqlite3") as journal:
                (row,) = journal.execute("SELECT data FROM snapshot WHERE slot = 1").fetchone()
            assert json.loads(row)["flow"]["hole"] == HOLE  # kept in the state row, and only there

            service.start()
            await watch.wait_for_message(
                f"{BASE}/events/round.paused",
                lambda m: m.json()["data"]["reason"] == "controller restarted mid-round",
                timeout=15,
            )
            await watch.wait_for_message(
                f"{BASE}/devices/shoe", lambda m: m.json()["status"] == "online", timeout=15
            )
            watch.publish(f"{BASE}/commands/resume/supervisor", {"transaction": "r-1"})
            reply = await watch.wait_for_message(f"{BASE}/replies/resume", lambda m: True, timeout=10)
            assert reply.json()["status"] == "ok", reply.json()
            # a refused decision gets its reason, and names no card either
            watch.publish(f"{BASE}/inputs/double/rules-engine", {"transaction": "d-1", "seat": 1})
            refused = await watch.wait_for_message(f"{BASE}/replies/double", lambda m: True, timeout=10)
            assert refused.json()["status"] == "error" and "9, 10, 11, not 14" in refused.json()["error"]
            await wait_until(
                lambda: b"PAUSED" not in streamed.rsplit(b"data:", 1)[-1], timeout=10, what="panel"
            )
            await asyncio.sleep(0.5)

            # everything shown so far: not a word of the hole card
            before_reveal = list(watch.messages)
            stream_before = bytes(streamed)
            log_before = log.read_text()
            assert face_down and any(m.topic.endswith("/state") for m in before_reveal)
            for message in before_reveal:
                assert not names_card(message.payload.decode(), HOLE), (message.topic, message.payload[:300])
            assert stream_before.count(b"data:") >= 3
            assert not names_card(stream_before.decode(), HOLE)
            assert not names_card(log_before, HOLE)

            watch.publish(f"{BASE}/inputs/stand/rules-engine", {"transaction": "s-1", "seat": 1, "hand": 1})
            result = await watch.wait_for_count(f"{BASE}/events/round.result", 1, timeout=15)
            data = result[0].json()["data"]
            assert data["dealer"]["cards"] == ["7H", HOLE] and data["hands"][0]["outcome"] == "lose"
            revealed = [
                m.json()["data"]
                for m in watch.on(f"{BASE}/events/card.dealt")
                if m.json()["data"]["position"] == "dealer" and m.json()["data"]["index"] == 1
            ]
            assert [r["card"] for r in revealed] == [HOLE]
    finally:
        stop_stream.set()
        stream.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await stream
        if service.process is not None:
            assert service.stop() in (0, -9), log.read_text()
        await shoe.stop()
