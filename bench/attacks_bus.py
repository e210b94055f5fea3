"""Attacks on a table's MQTT side by a low-privilege broker principal, for a studio's security officer.

Run it against a staging table (never a live one: if an attack is not held, that table drops off the broker
for a moment), with the credentials of a principal as privileged as the rules engine, and preferably a user
of its own granted the same ACL lines: where the broker ties client ids to user names
(`use_username_as_clientid`), a second connection as the live rules engine's user would take over that
connection, and the two would keep pushing each other off.

    python bench/attacks_bus.py --broker mqtts://broker.staging:8883 --tls-ca ca.crt \\
        --username security-probe --password ... --studio lisbon-1 --table bac-01

Each attack is printed with its outcome, `held` or `NOT held`, and one line of detail; the exit code is 1 if
any was not held, 2 if the table was not online to begin with. The table is watched through its retained
`<root>/status`: a table knocked off the broker comes back with a new `since` (or is still `offline`).

Numbered as in the security review:

1. error reply too large: an input of ~8,600 unknown keys (just under the table's default 64 KiB payload
   limit). A reply listing every problem would be several times the broker's `max_packet_size`, and the
   broker would disconnect the table for publishing it. Held if the table stays on the broker (its reply, if
   the principal may read replies, is small).
2. client-id takeover: a connection with the table's client id (`tablectl-<studio>-<table>` unless the table
   sets `[broker] client_id`; `--table-client-id`). Held if the table's session is untouched.
5. replay_events beyond 64-bit integers (`from_sequence` 2^63 and 1e300): held if the table answers with an
   error and stays on the broker. A principal that may not send commands (the rules engine) is stopped by the
   broker's ACL before the table sees it: held, but only the broker was tested; run it again with a
   supervisor's credentials to test the table itself.

Self-contained (aiomqtt only), so it runs from any machine that reaches the broker. `run_attacks(args)` is the
entry point for an umbrella script: it takes the parsed arguments and returns (attack, held, detail) tuples.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import string
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

import aiomqtt

#: the unknown keys of attack 1: one validation problem each, the payload just under 64 KiB
ATTACK_KEYS = 8617
#: how long a table may take to answer, and to come back after a disconnect (its Last Will, then online)
SETTLE_SECONDS = 1.5
#: a reply the broker would refuse to forward: the example broker's max_packet_size
MAX_PACKET = 262_144


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--broker", required=True, help="mqtt://host:port or mqtts://host:port")
    parser.add_argument("--username", help="a low-privilege principal, e.g. one with the rules engine's ACL")
    parser.add_argument(
        "--password", default=os.environ.get("ATTACK_MQTT_PASSWORD"), help="default: $ATTACK_MQTT_PASSWORD"
    )
    parser.add_argument("--studio", required=True, help="the table's studio_id")
    parser.add_argument("--table", required=True, help="the table's table_id")
    parser.add_argument("--tls-ca", help="CA bundle for an mqtts:// broker (default: the system's)")
    parser.add_argument("--table-client-id", help="default: tablectl-<studio>-<table>, as the table uses")
    parser.add_argument("--timeout", type=float, default=5.0, help="how long to wait for a reply (s)")
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


class _Session:
    """One connection as the principal: every message on its subscriptions, kept for the attacks."""

    def __init__(self, client: aiomqtt.Client) -> None:
        self.client = client
        self.messages: list[tuple[float, str, bytes]] = []
        self._arrived = asyncio.Event()

    async def read(self) -> None:
        with contextlib.suppress(aiomqtt.MqttError):
            async for message in self.client.messages:
                payload = message.payload if isinstance(message.payload, bytes) else b""
                self.messages.append((time.monotonic(), message.topic.value, payload))
                self._arrived.set()

    async def wait_for(self, match: Callable[[str, bytes], bool], timeout: float) -> bytes | None:
        deadline = time.monotonic() + timeout
        while True:
            for _, topic, payload in self.messages:
                if match(topic, payload):
                    return payload
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), left)


def _client(args: argparse.Namespace, identifier: str | None = None) -> aiomqtt.Client:
    url = urlsplit(args.broker)
    tls = url.scheme == "mqtts"
    return aiomqtt.Client(
        url.hostname or "127.0.0.1",
        url.port or (8883 if tls else 1883),
        username=args.username,
        password=args.password,
        identifier=identifier,
        protocol=aiomqtt.ProtocolVersion.V5,
        tls_params=aiomqtt.TLSParameters(ca_certs=args.tls_ca) if tls else None,
        timeout=10,
    )


@contextlib.asynccontextmanager
async def _session(args: argparse.Namespace, topics: list[str]) -> AsyncIterator[_Session]:
    async with _client(args) as client:
        session = _Session(client)
        reader = asyncio.create_task(session.read())
        try:
            await client.subscribe([(topic, 1) for topic in topics])
            yield session
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


def _json(payload: bytes | None) -> dict[str, Any]:
    try:
        value = json.loads(payload or b"")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


async def _status(args: argparse.Namespace, root: str) -> dict[str, Any]:
    """The table's retained status, read on a connection of its own."""
    async with _session(args, [f"{root}/status"]) as session:
        return _json(await session.wait_for(lambda topic, _: topic == f"{root}/status", args.timeout))


def _knocked_off(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """Why the table's status says it left the broker between two readings, or None."""
    if after.get("status") != "online":
        return f"the table's status is {after.get('status', 'unknown')!r}"
    if after.get("since") != before.get("since"):
        return f"the table reconnected (online since {after.get('since')}, was {before.get('since')})"
    return None


def _flap(session: _Session, root: str, since: Any, after: float) -> str | None:
    """A status published live after `after` saying the table went offline or came back."""
    for when, topic, payload in session.messages:
        if when >= after and topic == f"{root}/status":
            status = _json(payload)
            if status.get("status") != "online" or status.get("since") != since:
                return f"the table's status went {status.get('status')!r} (since {status.get('since')})"
    return None


def _many_unknown_keys(transaction: str, count: int) -> bytes:
    alphabet = string.ascii_letters + string.digits
    keys = [*alphabet, *(a + b for a in alphabet for b in alphabet)]
    keys += [a + b + c for a in alphabet for b in alphabet for c in alphabet]
    chosen = [key for key in keys if key != "by"][:count]
    return json.dumps(
        {"transaction": transaction, **dict.fromkeys(chosen, 0)}, separators=(",", ":")
    ).encode()


def _reply_to(root: str, transaction: str) -> Callable[[str, bytes], bool]:
    return lambda topic, payload: (
        topic.startswith(f"{root}/replies/") and _json(payload).get("transaction") == transaction
    )


async def _error_reply(
    args: argparse.Namespace, root: str, session: _Session, since: Any
) -> tuple[str, bool, str]:
    name = "attack 1, an error reply larger than the broker's packet limit"
    transaction = f"attack-1-{secrets.token_hex(4)}"
    payload = _many_unknown_keys(transaction, ATTACK_KEYS)
    started = time.monotonic()
    await session.client.publish(
        f"{root}/inputs/close_betting/{args.username or 'anonymous'}", payload, qos=1
    )
    reply = await session.wait_for(_reply_to(root, transaction), args.timeout)
    await asyncio.sleep(SETTLE_SECONDS)
    flap = _flap(session, root, since, started)
    if flap is not None:
        return name, False, f"{len(payload)}-byte input: {flap}"
    if reply is None:
        return (
            name,
            True,
            (
                f"{len(payload)}-byte input: the table stayed on the broker; no reply seen (may this "
                "principal read <root>/replies/?)"
            ),
        )
    if len(reply) > MAX_PACKET:
        return name, False, f"the reply is {len(reply)} bytes, over a {MAX_PACKET}-byte max_packet_size"
    error = str(_json(reply).get("error", ""))
    return name, True, f"a {len(reply)}-byte reply: {error[:100]}"


async def _replay_overflow(
    args: argparse.Namespace, root: str, session: _Session, since: Any
) -> tuple[str, bool, str]:
    name = "attack 5, replay_events beyond 64-bit integers"
    sent = {
        f"attack-5a-{secrets.token_hex(4)}": json.dumps({"from_sequence": 2**63}),
        f"attack-5b-{secrets.token_hex(4)}": '{"from_sequence": 1e300}',
    }
    started = time.monotonic()
    topic = f"{root}/commands/replay_events/{args.username or 'anonymous'}"
    for transaction, body in sent.items():
        payload = body.replace("{", f'{{"transaction": "{transaction}", ', 1)
        await session.client.publish(topic, payload, qos=1)
    replies = [await session.wait_for(_reply_to(root, t), args.timeout) for t in sent]
    await asyncio.sleep(SETTLE_SECONDS)
    flap = _flap(session, root, since, started)
    if flap is not None:
        return name, False, flap
    if all(reply is None for reply in replies):
        return (
            name,
            True,
            (
                "no reply and the table stayed on the broker: the broker's ACL keeps this principal from "
                "sending commands (only the broker was tested; run with a supervisor's credentials to test "
                "the table)"
            ),
        )
    errors = [_json(reply) for reply in replies if reply is not None]
    if any(e.get("status") != "error" for e in errors):
        return name, False, f"accepted: {errors}"
    return name, True, f"refused: {str(errors[0].get('error', ''))[:100]}"


async def _takeover(args: argparse.Namespace, root: str, before: dict[str, Any]) -> tuple[str, bool, str]:
    name = "attack 2, a client-id takeover"
    client_id = args.table_client_id or f"tablectl-{args.studio}-{args.table}"
    kicked = False
    try:
        async with _client(args, identifier=client_id) as intruder:
            # Connected: a broker that does not tie ids to users has just closed the table's session. The
            # table reconnects (closing this one in turn): wait for that, or for nothing to happen.
            try:
                await asyncio.wait_for(intruder.messages.__anext__(), SETTLE_SECONDS)
            except aiomqtt.MqttError:
                kicked = True
            except (TimeoutError, StopAsyncIteration):
                pass
    except aiomqtt.MqttError as exc:
        if not kicked:
            return name, True, f"the broker refused a connection with the table's client id ({exc})"
    await asyncio.sleep(SETTLE_SECONDS)
    after = await _status(args, root)
    why = _knocked_off(before, after)
    if why is not None:
        return name, False, f"connected as {client_id!r}: {why}"
    detail = f"connected as {client_id!r}; the table's session was untouched"
    if kicked:
        detail += " (this connection was closed: another client took its id back)"
    return name, True, detail


async def run_attacks(args: argparse.Namespace) -> list[tuple[str, bool, str]]:
    """Attacks 1, 5 and 2 (the takeover last: it may disturb the principal's own connections) against the
    table; (attack, held, detail) each."""
    root = f"studio/{args.studio}/table/{args.table}"
    results: list[tuple[str, bool, str]] = []
    before = await _status(args, root)
    if before.get("status") != "online":
        return [("preflight: the table is online", False, f"its retained status is {before or 'missing'}")]
    async with _session(args, [f"{root}/status", f"{root}/replies/#"]) as session:
        await session.wait_for(lambda topic, _: topic == f"{root}/status", args.timeout)
        since = before.get("since")
        results.append(await _error_reply(args, root, session, since))
        results.append(await _replay_overflow(args, root, session, since))
    now = await _status(args, root)  # a table knocked off above has a new `since`: compare with that
    results.append(await _takeover(args, root, now if now.get("status") == "online" else before))
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = asyncio.run(run_attacks(args))
    for attack, held, detail in results:
        print(f"{'held    ' if held else 'NOT held'}  {attack}: {detail}")
    if results and results[0][0].startswith("preflight"):
        return 2
    return 0 if all(held for _, held, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
