"""The console's sign-in under attack, against the real console (uvicorn, real sockets) and a real Mosquitto
that knows each user's own password: wrong passwords lock out only that user and that client address; only
the users the console is for may sign in; a user's sessions are capped (a new one ends the oldest, and its
broker connection); a deeply nested JSON body is a 400; and `tablectl console` refuses to start where the
supervisors' passwords would cross the network in clear, unless told so (then it warns)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from controller.console.app import EXTRA_CONNECTIONS, ConsoleSession
from controller.testing.console import running_console
from controller.testing.mosquitto import (
    HOST,
    ExampleBroker,
    MosquittoBroker,
    free_port,
    running_secured_broker,
    wait_until,
)
from controller.web.server import REJECTIONS
from tests.helpers.paths import REPO

pytestmark = pytest.mark.integration

STUDIO = "s1"
PASSWORDS = {
    "supervisor-a": "a-pw",
    "supervisor-b": "b-pw",
    "rules-engine": "rules-pw",
}
#: a second client address: on Linux all of 127.0.0.0/8 is this machine's loopback
OTHER_CLIENT = "127.0.0.2"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[MosquittoBroker]:
    with running_secured_broker(
        tmp_path, PASSWORDS, "".join(f"user {user}\ntopic read studio/#\n\n" for user in PASSWORDS)
    ) as secured:
        yield secured


@contextlib.asynccontextmanager
async def page_client(url: str, source: str | None = None) -> AsyncIterator[httpx.AsyncClient]:
    """A client that sends what the console's page sends (its token, its Origin), from address `source`."""
    transport = httpx.AsyncHTTPTransport(local_address=source) if source else None
    async with httpx.AsyncClient(base_url=url, timeout=20, transport=transport) as client:
        page = await client.get("/")
        match = re.search(r'<meta name="console-token" content="([^"]+)">', page.text)
        assert match is not None, page.text
        client.headers.update({"origin": url, "x-console-token": match.group(1)})
        yield client


async def sign_in(client: httpx.AsyncClient, user: str, password: str) -> httpx.Response:
    return await client.post("/api/session", json={"username": user, "password": password})


async def test_wrong_passwords_lock_out_only_that_user_and_that_client(broker: MosquittoBroker) -> None:
    async with (
        running_console(broker.url, STUDIO, sign_in_attempts=2) as console,
        page_client(console.url) as attacker,
        page_client(console.url, OTHER_CLIENT) as desk,
    ):
        # a flood of wrong passwords for supervisor-a: that user pauses after 2
        answers = [(await sign_in(attacker, "supervisor-a", "guess")).status_code for _ in range(4)]
        assert answers == [401, 401, 429, 429]
        # the same client guessing other users: that client pauses after 4 x 2 refused in all
        answers = [(await sign_in(attacker, f"supervisor-x{n}", "guess")).status_code for n in range(8)]
        assert answers == [401] * 6 + [429] * 2
        assert (await sign_in(attacker, "supervisor-b", PASSWORDS["supervisor-b"])).status_code == 429
        # another supervisor on another desk still signs in, and nobody else was locked out in all
        signed = await sign_in(desk, "supervisor-b", PASSWORDS["supervisor-b"])
        assert signed.status_code == 200, signed.text
        assert (await desk.get("/api/session")).json()["user"] == "supervisor-b"
        # (supervisor-a, whose name the flood aimed at, waits out the pause wherever they sign in from)
        locked = await sign_in(desk, "supervisor-a", PASSWORDS["supervisor-a"])
        assert locked.status_code == 429 and 1 <= int(locked.headers["retry-after"]) <= 61
        assert console.console.sessions_of("supervisor-b") and not console.console.sessions_of("supervisor-a")


async def test_only_the_users_the_console_is_for_may_sign_in(
    broker: MosquittoBroker, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_console(broker.url, STUDIO) as console, page_client(console.url) as client:
        before = REJECTIONS.counts[("console", "sign_in_user_not_allowed")]
        refused = await sign_in(client, "rules-engine", PASSWORDS["rules-engine"])
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"] == (
            "this user may not sign in on this console (see [console] sign_in_users)"
        )
        assert REJECTIONS.counts[("console", "sign_in_user_not_allowed")] == before + 1
        assert console.console.sessions == {}
        # refused before the broker is asked: it never saw that user from the console
        assert "u'rules-engine'" not in broker.log()
        assert (await sign_in(client, "supervisor-a", PASSWORDS["supervisor-a"])).status_code == 200
        assert "u'supervisor-a'" in broker.log()
    # the allow-list is the studio's to set (names or patterns)
    async with (
        running_console(broker.url, STUDIO, sign_in_users=["rules-*"]) as console,
        page_client(console.url) as client,
    ):
        assert (await sign_in(client, "rules-engine", PASSWORDS["rules-engine"])).status_code == 200
        assert (await sign_in(client, "supervisor-a", PASSWORDS["supervisor-a"])).status_code == 403


async def test_a_password_typed_in_the_user_field_is_neither_logged_nor_answered(
    broker: MosquittoBroker, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    typed = PASSWORDS["supervisor-a"] + "-Tr0ub4dor"
    # each reason of refusal is logged at most once a minute: an earlier refusal must not hide the next
    monkeypatch.setattr(REJECTIONS, "_logged", {})
    with caplog.at_level(logging.WARNING, logger="controller.web.server"):
        async with running_console(broker.url, STUDIO) as console, page_client(console.url) as client:
            refused = await sign_in(client, typed, "supervisor-a")
            assert refused.status_code == 403 and typed not in refused.text
            # a name the allow-list names is still told, in the answer and in the log
            wrong = await sign_in(client, "supervisor-b", "guess")
            assert wrong.status_code == 401 and "'supervisor-b'" in wrong.text
        assert "the broker refused the sign-in of 'supervisor-b'" in caplog.text
        monkeypatch.setattr(REJECTIONS, "_logged", {})
        # an allow-list of wildcards alone admits any name: the broker refuses it, and it is not repeated
        async with (
            running_console(broker.url, STUDIO, sign_in_users=["*"]) as console,
            page_client(console.url) as client,
        ):
            refused = await sign_in(client, typed, "supervisor-a")
            assert refused.status_code == 401 and typed not in refused.text
    assert typed not in caplog.text
    assert caplog.text.count("an unknown user name (14 characters)") == 2


async def test_a_users_sessions_are_capped_and_a_new_one_ends_the_oldest_and_its_broker_connection(
    broker: MosquittoBroker,
) -> None:
    async with (
        running_console(broker.url, STUDIO, max_sessions=3, max_sessions_per_user=2) as running,
        page_client(running.url) as first,
        page_client(running.url) as second,
        page_client(running.url) as third,
        page_client(running.url) as other,
    ):
        console = running.console

        def sessions_of_a() -> list[ConsoleSession]:
            return [session for session in console.sessions.values() if session.user == "supervisor-a"]

        for client in (first, second):
            assert (await sign_in(client, "supervisor-a", PASSWORDS["supervisor-a"])).status_code == 200
        assert (await sign_in(other, "supervisor-b", PASSWORDS["supervisor-b"])).status_code == 200
        oldest = sessions_of_a()[0]
        assert oldest.link.connected
        # a wrong password for that user ends nobody's session
        assert (await sign_in(third, "supervisor-a", "wrong")).status_code == 401
        assert len(sessions_of_a()) == 2
        # the console is full (3), but supervisor-a at their own cap takes the place of their oldest
        assert (await sign_in(third, "supervisor-a", PASSWORDS["supervisor-a"])).status_code == 200
        assert len(console.sessions) == 3 and len(sessions_of_a()) == 2
        assert oldest.id not in console.sessions and oldest.closed.is_set()
        await wait_until(lambda: not oldest.link.connected, timeout=5, what="its broker connection closed")
        assert (await first.get("/api/session")).json()["user"] is None
        assert (await first.get("/api/tables/t1")).status_code == 401
        for client in (second, third, other):
            assert (await client.get("/api/session")).json()["user"] is not None
        # and a third user finds the console full: nobody else's session is ended for them
        assert (await sign_in(first, "supervisor-x", "any")).status_code == 503


async def test_a_sign_in_whose_page_is_closed_ends_and_frees_its_place(broker: MosquittoBroker) -> None:
    # 16 sign-ins whose tabs were closed kept every supervisor out for 12 hours: a session with no page open
    # for page_gone_seconds ends now, and its broker connection with it; one whose page is open stays
    async with (
        running_console(broker.url, STUDIO, max_sessions=2, page_gone_seconds=5) as running,
        page_client(running.url) as closed_tab,
        page_client(running.url) as open_tab,
        page_client(running.url) as newcomer,
    ):
        console = running.console
        assert (await sign_in(closed_tab, "supervisor-a", PASSWORDS["supervisor-a"])).status_code == 200
        assert (await sign_in(open_tab, "supervisor-b", PASSWORDS["supervisor-b"])).status_code == 200
        [gone] = [console.sessions[i] for i in console.sessions_of("supervisor-a")]
        async with closed_tab.stream("GET", "/api/stream") as page:
            assert page.status_code == 200
            await wait_until(lambda: gone.streams == 1, timeout=5, what="the page's stream")
        # the tab is closed; the console is full meanwhile, and its /metrics says why (no sign-in needed)
        assert (await sign_in(newcomer, "supervisor-x", "any")).status_code == 503
        scrape = (await newcomer.get("/metrics")).text
        assert 'tablectl_console_sessions{studio="s1"} 2.0' in scrape
        assert 'tablectl_console_sessions_without_page{studio="s1"} 2.0' in scrape
        assert 'tablectl_console_broker_connections_up{studio="s1"} 2.0' in scrape
        assert 'tablectl_console_tables_offline_with_broker{studio="s1"} 0.0' in scrape
        assert "process_resident_memory_bytes" in scrape
        async with open_tab.stream("GET", "/api/stream") as page:
            assert page.status_code == 200
            await wait_until(lambda: gone.closed.is_set(), timeout=15, what="the abandoned session's end")
            await wait_until(lambda: not gone.link.connected, timeout=5, what="its broker connection closed")
            assert (await closed_tab.get("/api/session")).json()["user"] is None
            # the supervisor whose page is open is still signed in, and the freed place can be taken
            assert (await open_tab.get("/api/session")).json()["user"] == "supervisor-b"
            signed = await sign_in(newcomer, "supervisor-a", PASSWORDS["supervisor-a"])
            assert signed.status_code == 200, signed.text
            scrape = (await newcomer.get("/metrics")).text
            assert 'tablectl_console_pages{studio="s1"} 1.0' in scrape


async def test_a_deeply_nested_json_body_is_a_400_with_a_reason_and_no_traceback(
    broker: MosquittoBroker, caplog: pytest.LogCaptureFixture
) -> None:
    deep = "[" * 8000 + "]" * 8000
    headers = {"content-type": "application/json"}
    async with running_console(broker.url, STUDIO) as console, page_client(console.url) as client:
        before = REJECTIONS.counts[("console", "too_deep")]
        with caplog.at_level(logging.DEBUG):
            refused = await client.post("/api/session", content=deep, headers=headers)
            assert refused.status_code == 400, refused.text
            assert "nested deeper than 32 levels" in refused.json()["error"]
            assert (await sign_in(client, "supervisor-a", PASSWORDS["supervisor-a"])).status_code == 200
            command = await client.post("/api/tables/t1/commands/pause", content=deep, headers=headers)
            assert command.status_code == 400, command.text
            assert "nested deeper than 32 levels" in command.json()["error"]
        assert REJECTIONS.counts[("console", "too_deep")] == before + 2
        assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_idle_connections_never_keep_a_supervisor_out(broker: MosquittoBroker) -> None:
    async with running_console(broker.url, STUDIO) as console:
        port = console.console.settings.port
        limit = console.console.settings.max_streams + EXTRA_CONNECTIONS
        idle = [await asyncio.open_connection(HOST, port) for _ in range(limit)]
        try:
            async with asyncio.timeout(3), page_client(console.url) as client:
                signed = await sign_in(client, "supervisor-a", PASSWORDS["supervisor-a"])
                assert signed.status_code == 200, signed.text
        finally:
            for _, writer in idle:
                writer.close()


# -- tablectl console: passwords in clear are refused unless the operator says so ---------------------------


def console_process(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / f"console-{time.monotonic_ns()}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "console", "--studio", STUDIO, *args],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return process, log


def wait_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        if "tablectl console: studio" in log.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(log.read_text())


def stop(process: subprocess.Popen[bytes]) -> int:
    process.terminate()
    return process.wait(15)


@pytest.mark.parametrize(
    ("args", "flag", "said"),
    [
        # a broker on another host over mqtt:// (nothing is sent to it: nobody signs in here)
        (["--broker", "mqtt://192.0.2.10:1883"], "--allow-cleartext-broker-passwords", "use mqtts://"),
        (
            ["--broker", "mqtt://127.0.0.1:1883", "--host", "0.0.0.0"],
            "--allow-http-sign-in",
            "TLS-terminating reverse proxy",
        ),
    ],
)
def test_tablectl_console_refuses_cleartext_passwords_unless_allowed_and_then_warns(
    tmp_path: Path, args: list[str], flag: str, said: str
) -> None:
    port = free_port()
    process, log = console_process(tmp_path, *args, "--port", str(port))
    assert process.wait(15) == 2, log.read_text()
    text = log.read_text()
    assert "tablectl: error: refusing to start:" in text and said.lower() in text.lower() and flag in text, (
        text
    )
    assert "Traceback" not in text and "tablectl console: studio" not in text
    with pytest.raises(httpx.ConnectError), httpx.Client() as client:
        client.get(f"http://{HOST}:{port}/", timeout=1)

    process, log = console_process(tmp_path, *args, "--port", str(port), flag)
    try:
        wait_listening(port, process, log)
        with httpx.Client() as client:
            assert client.get(f"http://{HOST}:{port}/", timeout=5).status_code == 200
    finally:
        assert stop(process) == 0, log.read_text()
    text = log.read_text()
    assert re.search(
        rf"WARNING controller\.console\.app: console: .*\(allowed by console\.\S+ \({flag}\)\)", text
    )
    assert "Traceback" not in text


async def test_the_console_toml_settings_allow_it_too(
    broker: MosquittoBroker, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        async with running_console(
            "mqtt://192.0.2.10:1883", STUDIO, allow_cleartext_broker_passwords=True
        ) as console:
            assert console.console.settings.allow_cleartext_broker_passwords
    warned = [r.getMessage() for r in caplog.records if "in clear to 192.0.2.10:1883" in r.getMessage()]
    assert len(warned) == 1 and "use mqtts://" in warned[0]
    # a broker on the loopback, or over mqtts://, or a fixed user: nothing to refuse
    async with running_console(broker.url, STUDIO):
        pass


async def test_on_the_example_broker_a_second_sign_in_of_a_user_replaces_the_first_without_flapping(
    tmp_path: Path,
) -> None:
    # The example broker ties client ids to user names (so nobody takes over a table's session): a user holds
    # one broker connection at a time. Two sessions of one user would push each other off the broker for as
    # long as both lived; by default a new sign-in ends the user's oldest session instead.
    example = ExampleBroker(tmp_path / "example", {"supervisor-desk-1": "desk-pw"})
    example.start()
    try:
        async with (
            running_console(example.url, "lisbon-1") as running,
            page_client(running.url) as first,
            page_client(running.url) as second,
        ):
            assert (await sign_in(first, "supervisor-desk-1", "desk-pw")).status_code == 200
            (old,) = running.console.sessions.values()
            await wait_until(lambda: old.link.connected, timeout=10, what="the first session connected")
            assert (await sign_in(second, "supervisor-desk-1", "desk-pw")).status_code == 200
            (new,) = running.console.sessions.values()
            assert new is not old and old.closed.is_set()
            await wait_until(lambda: new.link.connected, timeout=10, what="the second session connected")
            connects = example.log().count("New client connected")
            await asyncio.sleep(3.0)  # a pushed-off session would have reconnected meanwhile (backoff < 1 s)
            assert new.link.connected
            assert example.log().count("New client connected") == connects
    finally:
        example.kill()


async def test_tablectl_console_stops_within_seconds_on_sigterm_with_sessions_and_open_streams(
    tmp_path: Path, broker: MosquittoBroker
) -> None:
    # A service manager sends SIGTERM and waits; the console must not hold its stop on the signed-in
    # supervisors' broker connections or on the event streams their pages keep open.
    port = free_port()
    process, log = console_process(tmp_path, "--broker", broker.url, "--port", str(port))
    try:
        wait_listening(port, process, log)
        url = f"http://{HOST}:{port}"
        async with page_client(url) as desk_a, page_client(url) as desk_b:
            for client, user in ((desk_a, "supervisor-a"), (desk_b, "supervisor-b")):
                assert (await sign_in(client, user, PASSWORDS[user])).status_code == 200
            async with (
                desk_a.stream("GET", "/api/stream") as stream_a,
                desk_b.stream("GET", "/api/stream") as stream_b,
            ):
                for stream in (stream_a, stream_b):
                    assert stream.status_code == 200
                    lines = stream.aiter_lines()
                    # the page's first update: the stream is open and the session is using it
                    while await asyncio.wait_for(anext(lines), 10) != "event: update":
                        pass
                asked = time.monotonic()
                process.terminate()
                code = await asyncio.to_thread(process.wait, 15)
                took = time.monotonic() - asked
        assert code == 0, log.read_text()
        assert took < 5.0, (took, log.read_text())
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)
    assert "Traceback" not in log.read_text(), log.read_text()
