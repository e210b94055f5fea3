"""A real Mosquitto broker for tests, and a recording MQTT client to watch what the table publishes.

`MosquittoBroker` runs the system's mosquitto on a free 127.0.0.1 port with its own config and persistence
directory. `stop()` shuts it down cleanly (it saves retained messages and durable sessions, like a broker
restart in production), `kill()` crashes it, `start()` brings it back on the same port.

Needs paho-mqtt and pytest (pyproject's `test` extra): a missing binary skips the test, or fails it in CI.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.properties import Properties

HOST = "127.0.0.1"


def find_binary(name: str, *extra_dirs: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for directory in extra_dirs:
        candidate = Path(directory) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def require_binary(name: str, *extra_dirs: str) -> str:
    """The binary's path; a missing one skips the test locally but fails it in CI."""
    found = find_binary(name, *extra_dirs)
    if found is None:
        message = f"{name} is not installed (Debian: apt-get install {name})"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def require_mosquitto() -> str:
    return require_binary("mosquitto", "/usr/sbin")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


#: ports a broker tries at its first start before it gives up (see `MosquittoBroker.start`)
PORT_ATTEMPTS = 5


class PortTaken(RuntimeError):
    """A broker's port was another process's when it started."""


def listens_on(pid: int, port: int) -> bool | None:
    """Whether process `pid` holds a socket listening on `HOST`:`port` (IPv4 TCP); None where /proc cannot
    tell (not Linux, or the process's descriptors unreadable)."""
    # /proc/net/tcp writes the address as the host's own 32-bit word (in hex), the port in network order
    address = int.from_bytes(socket.inet_aton(HOST), "big").to_bytes(4, sys.byteorder).hex().upper()
    wanted = f"{address}:{port:04X}"
    descriptors = Path(f"/proc/{pid}/fd")
    try:
        rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
        names = os.listdir(descriptors)
    except OSError:
        return None
    listening = {f"socket:[{row[9]}]" for row in rows if row[1] == wanted and row[3] == "0A"}
    for name in names:
        # a descriptor may close while it is read (the listing's own, for this process)
        with contextlib.suppress(OSError):
            if os.readlink(descriptors / name) in listening:
                return True
    return False


class MosquittoBroker:
    def __init__(
        self, binary: str, workdir: Path, *, extra_config: str = "", persistence: bool = True
    ) -> None:
        self.binary = binary
        self.workdir = workdir
        self.port = free_port()
        self.extra_config = extra_config
        self.persistence = persistence
        self.config_path = workdir / "mosquitto.conf"
        self.log_path = workdir / "mosquitto.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._has_run = False

    @property
    def url(self) -> str:
        return f"mqtt://{HOST}:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _write_config(self) -> None:
        lines = [f"listener {self.port} {HOST}", "allow_anonymous true"]
        if os.geteuid() == 0:
            # As root mosquitto drops to the `mosquitto` user, who cannot read our private temp directory.
            lines.append(f"user {getpass.getuser()}")
        if self.persistence:
            lines += ["persistence true", f"persistence_location {self.workdir}/"]
        lines.append(self.extra_config)
        self.config_path.write_text("\n".join(lines) + "\n")

    def start(self, timeout: float = 10.0) -> None:
        """Start the broker and wait until it listens on its port.

        `free_port` only finds a number free at that moment: another process (the other worker of a parallel
        test run) may take it before mosquitto binds it. Before its first start a broker then moves to other
        free ports (up to `PORT_ATTEMPTS` tries); once it has run, its port is what its clients know, and a
        port taken meanwhile is an error."""
        assert not self.running, "broker already running"
        self.workdir.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                self._start_on_port(timeout)
            except PortTaken:
                if self._has_run or attempt == PORT_ATTEMPTS:
                    raise
                self._new_ports()
            else:
                self._has_run = True
                return

    def _new_ports(self) -> None:
        self.port = free_port()

    def _start_on_port(self, timeout: float) -> None:
        self._write_config()
        logged = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [self.binary, "-c", str(self.config_path)], stdout=log, stderr=subprocess.STDOUT
            )
        process = self._process
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                self._process = None
                if "Address already in use" in self.log()[logged:]:
                    raise PortTaken(f"a port of this broker ({self.port}) was taken:\n{self.log()}")
                raise RuntimeError(f"mosquitto exited with {process.returncode}:\n{self.log()}")
            try:
                with socket.create_connection((HOST, self.port), timeout=0.2):
                    pass
            except OSError:
                time.sleep(0.02)
                continue
            if listens_on(process.pid, self.port) is not False:
                return
            # what answered is another process's listener: this mosquitto cannot bind, and ends
            self._end(signal.SIGKILL)
            raise PortTaken(f"{HOST}:{self.port} is another process's listener")
        self.kill()
        raise RuntimeError(
            f"mosquitto did not listen on {HOST}:{self.port} within {timeout} s:\n{self.log()}"
        )

    def stop(self) -> None:
        """Clean shutdown: closes every connection, saves the persistence database."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        self._end(signal.SIGKILL)

    def _end(self, sig: signal.Signals) -> None:
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.send_signal(sig)
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def write_password_file(path: Path, users: dict[str, str]) -> Path:
    """A Mosquitto password file for `users` (name -> password), made with mosquitto_passwd."""
    passwd = require_binary("mosquitto_passwd", "/usr/bin")
    for n, (user, password) in enumerate(users.items()):
        flags = ["-c"] if n == 0 else []
        subprocess.run([passwd, "-b", *flags, str(path), user, password], check=True)
    return path


def secured_broker(
    workdir: Path, users: dict[str, str], acl: Path, extra_config: str = ""
) -> MosquittoBroker:
    """A broker that lets in only `users` (name -> password) and confines them with the ACL file `acl`.
    Rewrite the ACL file and `stop()`/`start()` the broker to change what they may do."""
    workdir.mkdir(parents=True, exist_ok=True)
    passwords = write_password_file(workdir / "passwd", users)
    config = f"allow_anonymous false\npassword_file {passwords}\nacl_file {acl}\n{extra_config}"
    return MosquittoBroker(require_mosquitto(), workdir / "broker", extra_config=config)


@contextlib.contextmanager
def running_secured_broker(
    directory: Path, users: dict[str, str], acl_text: str
) -> Iterator[MosquittoBroker]:
    """`secured_broker` started in `directory` with the ACL `acl_text` (written to `directory/acl`), killed on
    exit: what a test's broker fixture yields."""
    directory.mkdir(parents=True, exist_ok=True)
    acl = directory / "acl"
    acl.write_text(acl_text)
    broker = secured_broker(directory / "broker", users, acl)
    broker.start()
    try:
        yield broker
    finally:
        broker.kill()


def make_test_pki(directory: Path) -> dict[str, Path]:
    """A throwaway CA, a server certificate for 127.0.0.1 and a client certificate (openssl CLI)."""
    openssl = require_binary("openssl", "/usr/bin")
    directory.mkdir()
    files = {name: directory / name for name in ("ca.key", "ca.crt", "server.key", "server.crt",
                                                  "client.key", "client.crt")}  # fmt: skip

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True, cwd=directory)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=test CA")
    (directory / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    (directory / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for role in ("server", "client"):
        run("req", *ec, "-keyout", f"{role}.key", "-out", f"{role}.csr", "-subj", f"/CN={role}")
        run("x509", "-req", "-in", f"{role}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{role}.crt", "-days", "2", "-extfile", f"{role}.ext")  # fmt: skip
    return files


#: the broker config and ACL a studio is given (examples/mosquitto/)
EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "mosquitto"


class ExampleBroker(MosquittoBroker):
    """Mosquitto running the shipped example config (`examples/mosquitto/mosquitto.conf`) as it is, but for
    what ties it to a studio host: its paths (password file, ACL, certificates, persistence) and ports, the
    plain listener on `port` and the TLS one on `tls_port`, and the log to this test's file. Every other line
    is used verbatim; a line that names a host path not rewritten here fails the test rather than being
    skipped."""

    def __init__(self, workdir: Path, users: dict[str, str], *, acl: Path | None = None) -> None:
        super().__init__(require_mosquitto(), workdir / "broker")
        workdir.mkdir(parents=True, exist_ok=True)
        self.passwords = write_password_file(workdir / "passwd", users)
        self.acl = acl or EXAMPLE_DIR / "acl"
        self.pki = make_test_pki(workdir / "pki")
        self.tls_port = free_port()

    def _new_ports(self) -> None:
        super()._new_ports()
        self.tls_port = free_port()

    def _write_config(self) -> None:
        certs = {"ca.crt": "ca.crt", "broker.crt": "server.crt", "broker.key": "server.key"}
        lines = []
        for line in (EXAMPLE_DIR / "mosquitto.conf").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "persistence_location":
                line = f"persistence_location {self.workdir}/"
            elif key == "log_dest":
                line = "log_dest stdout"
            elif key == "password_file":
                line = f"password_file {self.passwords}"
            elif key == "acl_file":
                line = f"acl_file {self.acl}"
            elif key in ("cafile", "certfile", "keyfile"):
                line = f"{key} {self.pki[certs[Path(value).name]]}"
            elif line == "listener 8883":
                line = f"listener {self.tls_port} {HOST}"
            elif line == "listener 1883 127.0.0.1":
                line = f"listener {self.port} {HOST}"
            elif not line.startswith("#") and ("/" in value or key == "listener"):
                raise AssertionError(f"the example broker config has a line this test does not adapt: {line}")
            lines.append(line)
        if os.geteuid() == 0:
            # As root mosquitto drops to the `mosquitto` user, who cannot read our private temp directory.
            lines.insert(0, f"user {getpass.getuser()}")
        self.config_path.write_text("\n".join(lines) + "\n")


class TakeoverRelay:
    """A TCP relay in front of a real broker that adds what Mosquitto sends from 2.0.15 on and the 2.0.11 of
    Debian 12 does not: when the broker closes a client's connection because another client connected with
    the same client id, the MQTT 5 DISCONNECT with reason code 0x8E (Session taken over) first. The relay
    cannot see why the broker closed a connection: the test says a takeover is coming (`expect_takeover`);
    any other close (a broker restart) is passed on as it is, a bare close."""

    #: DISCONNECT, remaining length 2, reason 0x8E, no properties (MQTT 5.0 section 3.14)
    SESSION_TAKEN_OVER = b"\xe0\x02\x8e\x00"

    def __init__(self, broker: MosquittoBroker) -> None:
        self.broker = broker
        self.port = free_port()
        self.takeover_expected = False
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"mqtt://{HOST}:{self.port}"

    def expect_takeover(self) -> None:
        self.takeover_expected = True

    async def __aenter__(self) -> TakeoverRelay:
        self._server = await asyncio.start_server(self._relay, HOST, self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _relay(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            broker_in, broker_out = await asyncio.open_connection(HOST, self.broker.port)
        except OSError:
            client_out.close()
            self._tasks.discard(task)
            return
        upstream = asyncio.create_task(self._pump(client_in, broker_out))
        try:
            await self._pump(broker_in, client_out)  # until the broker closes the connection
            upstream.cancel()
            await asyncio.gather(upstream, return_exceptions=True)  # one reader of client_in at a time
            if self.takeover_expected:
                self.takeover_expected = False
                client_out.write(self.SESSION_TAKEN_OVER)
                await client_out.drain()
                # Read on until the client closes: closing with its bytes unread would reset the connection,
                # and the reset may reach it before the DISCONNECT does.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._discard(client_in), 2.0)
        except OSError:
            pass
        finally:
            upstream.cancel()
            client_out.close()
            broker_out.close()
            self._tasks.discard(task)

    @staticmethod
    async def _discard(source: asyncio.StreamReader) -> None:
        with contextlib.suppress(OSError):
            while await source.read(65536):
                pass

    @staticmethod
    async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()


def _mqtt_string(text: str) -> bytes:
    data = text.encode()
    return len(data).to_bytes(2, "big") + data


def _remaining_length(length: int) -> bytes:
    out = bytearray()
    while True:
        length, digit = divmod(length, 128)
        out.append(digit | (0x80 if length else 0))
        if not length:
            return bytes(out)


async def mqtt5_connect(
    port: int, client_id: str, *, username: str | None = None, password: str | None = None
) -> tuple[int, asyncio.StreamWriter]:
    """Connect once with MQTT 5 and this client id, and stay connected: (CONNACK reason code, the connection
    to close). Unlike a client library it never reconnects by itself, so a test decides how often it
    connects."""
    flags = 0x02 | (0x80 if username is not None else 0) | (0x40 if password is not None else 0)
    body = _mqtt_string("MQTT") + bytes([5, flags]) + (60).to_bytes(2, "big") + b"\x00"
    body += _mqtt_string(client_id)
    if username is not None:
        body += _mqtt_string(username)
    if password is not None:
        body += _mqtt_string(password)
    reader, writer = await asyncio.open_connection(HOST, port)
    writer.write(b"\x10" + _remaining_length(len(body)) + body)
    await writer.drain()
    connack = await asyncio.wait_for(reader.readexactly(4), 5)  # 0x20, length, flags, reason code
    assert connack[0] == 0x20, connack
    return connack[3], writer


@dataclass(frozen=True)
class Received:
    topic: str
    payload: bytes
    retain: bool
    properties: Properties | None

    def json(self) -> Any:
        return json.loads(self.payload)


class MqttRecorder:
    """A paho client on its own thread that records every message on its subscriptions.

    Async tests await `wait_for(...)` while the code under test keeps running on the event loop.
    `persistent=True` keeps a durable session (clean session off, QoS 1), so the broker queues messages
    for it while it is disconnected, e.g. across a broker restart.
    """

    def __init__(
        self,
        broker: MosquittoBroker,
        topics: Sequence[str],
        *,
        protocol: Literal["5", "3.1.1"] = "3.1.1",
        client_id: str = "",
        persistent: bool = False,
        username: str | None = None,
        password: str | None = None,
        port: int | None = None,
    ) -> None:
        self.broker = broker
        self.topics = list(topics)
        self.messages: list[Received] = []
        self._lock = threading.Lock()
        self._subscribed = threading.Event()
        v5 = protocol == "5"
        self._client = paho.Client(
            callback_api_version=CallbackAPIVersion.VERSION2,
            client_id=client_id,
            protocol=paho.MQTTv5 if v5 else paho.MQTTv311,
            clean_session=None if v5 else not persistent,
        )
        self._v5 = v5
        self._persistent = persistent
        self._port = port or broker.port
        if username is not None:
            self._client.username_pw_set(username, password)
        self._client.reconnect_delay_set(min_delay=1, max_delay=1)
        self._client.on_connect = self._on_connect
        self._client.on_subscribe = self._on_subscribe
        self._client.on_message = self._on_message

    async def __aenter__(self) -> MqttRecorder:
        connect_kwargs: dict[str, Any] = {}
        if self._v5:
            connect_kwargs["clean_start"] = not self._persistent
        self._client.connect(HOST, self._port, keepalive=5, **connect_kwargs)
        self._client.loop_start()
        await wait_until(self._subscribed.is_set, what="the recorder's subscription")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._client.disconnect()
        self._client.loop_stop()

    def _on_connect(self, client: paho.Client, userdata: Any, flags: Any, reason: Any, props: Any) -> None:
        if self.topics:
            client.subscribe([(topic, 1) for topic in self.topics])
        else:
            self._subscribed.set()

    def _on_subscribe(self, client: paho.Client, userdata: Any, mid: int, codes: Any, props: Any) -> None:
        self._subscribed.set()

    def _on_message(self, client: paho.Client, userdata: Any, message: paho.MQTTMessage) -> None:
        received = Received(
            topic=message.topic,
            payload=bytes(message.payload),
            retain=bool(message.retain),
            properties=getattr(message, "properties", None),
        )
        with self._lock:
            self.messages.append(received)

    def on(self, topic_filter: str) -> list[Received]:
        with self._lock:
            return [m for m in self.messages if paho.topic_matches_sub(topic_filter, m.topic)]

    def clear(self) -> None:
        with self._lock:
            self.messages.clear()

    async def wait_for_count(self, topic_filter: str, count: int, timeout: float = 5.0) -> list[Received]:
        await wait_until(
            lambda: len(self.on(topic_filter)) >= count,
            timeout=timeout,
            what=lambda: f"{count} message(s) on {topic_filter}; got {self.on(topic_filter)}",
        )
        return self.on(topic_filter)

    async def wait_for_message(
        self, topic_filter: str, predicate: Callable[[Received], bool], timeout: float = 5.0
    ) -> Received:
        def matching() -> list[Received]:
            return [m for m in self.on(topic_filter) if predicate(m)]

        await wait_until(
            lambda: bool(matching()), timeout=timeout, what=f"a matching message on {topic_filter}"
        )
        return matching()[0]

    def publish(
        self,
        topic: str,
        payload: bytes | str | dict[str, Any],
        *,
        properties: Properties | None = None,
        retain: bool = False,
    ) -> None:
        body = json.dumps(payload) if isinstance(payload, dict) else payload
        info = self._client.publish(topic, body, qos=1, retain=retain, properties=properties)
        assert info.rc == paho.MQTT_ERR_SUCCESS, f"publish failed: {info.rc}"


async def wait_until(
    condition: Callable[[], bool], *, timeout: float = 5.0, what: str | Callable[[], str] = "condition"
) -> None:
    """Poll without blocking the event loop (the code under test runs on it)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            description = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout} s waiting for {description}")
        await asyncio.sleep(0.01)
