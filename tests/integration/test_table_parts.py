"""The table's run as the composition root: one TaskGroup for the table's own tasks and the parts run with
it (`tablectl run`: the panel, the metrics, the systemd watchdog; the demo: its watcher, dealer, ...). A part
that ends or fails stops the table, its own tasks first, then the parts, then the journal; a part's error is
the run's, and `tablectl run` says it in one line, as before.

Its integration tests; the e2e ones are in `tests/e2e/test_table_parts.py`."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from controller.service import TableService
from controller.table_build import TABLE_CONFIGS
from tests.helpers import table_parts as shared
from tests.helpers.paths import REPO

pytestmark = pytest.mark.integration
taken_port = shared.taken_port  # a fixture (tests/helpers/table_parts.py)

#: the table's own tasks (`TableService.run`), by their task names
OWN_TASKS = {"mqtt-bus", "device-shoe", "deadlines", "retention"}


def table_config(tmp_path: Path) -> Any:
    return TABLE_CONFIGS.from_dict(
        {
            "table": {"studio_id": "s1", "table_id": "b1", "game": "baccarat", "data_dir": str(tmp_path)},
            "broker": {"url": "mqtt://127.0.0.1:9"},  # refused: the bus retries, the table runs on
            "devices": {"shoe": {"protocol": "shoe-line", "port": "/dev/null"}},
        },
        environ={},
    )


def running_task_names() -> set[str]:
    return {task.get_name() for task in asyncio.all_tasks() if not task.done()}


async def test_a_part_that_ends_stops_the_table(tmp_path: Path) -> None:
    service = TableService(table_config(tmp_path))

    async def short() -> None:
        await asyncio.sleep(0.2)

    await asyncio.wait_for(service.run(parts={"short": short}), 10)
    assert not OWN_TASKS & running_task_names()


async def test_a_failing_part_stops_the_table_own_tasks_first_and_its_error_is_the_runs(
    tmp_path: Path,
) -> None:
    service = TableService(table_config(tmp_path))
    seen_on_cancel: dict[str, Any] = {}

    async def failing() -> None:
        await asyncio.sleep(0.2)
        raise RuntimeError("the part broke")

    async def patient() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            # the parts stop after the table's own tasks, and before the journal closes
            seen_on_cancel["own tasks running"] = OWN_TASKS & running_task_names()
            seen_on_cancel["journal snapshot"] = service.journal.snapshot()
            raise

    with pytest.raises(RuntimeError, match="the part broke"):
        await asyncio.wait_for(service.run(parts={"failing": failing, "patient": patient}), 10)
    assert seen_on_cancel["own tasks running"] == set()
    assert seen_on_cancel["journal snapshot"] is not None


async def test_a_task_started_before_the_table_is_handed_to_it_and_stopped_with_it(tmp_path: Path) -> None:
    """As the systemd watchdog: pinging before the journal opens (a full disk), then owned by the run."""
    pings: list[float] = []

    async def watchdog() -> None:
        while True:
            pings.append(time.monotonic())
            await asyncio.sleep(0.02)

    pinging = asyncio.create_task(watchdog())
    await asyncio.sleep(0.1)
    service = TableService(table_config(tmp_path))
    running = asyncio.create_task(service.run(parts={"sd-watchdog": lambda: pinging}))
    await asyncio.sleep(0.3)
    assert not pinging.done() and not running.done()
    before = len(pings)
    await asyncio.sleep(0.1)
    assert len(pings) > before  # still pinging while the table runs
    service.stop()
    await asyncio.wait_for(running, 10)
    assert pinging.cancelled()


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        (
            "panel",
            "panel on 127.0.0.1:{port}: the dealer panel cannot listen on 127.0.0.1:{port} (port in use?)",
        ),
        ("metrics", "metrics on 127.0.0.1:{port}: metrics cannot listen on 127.0.0.1:{port} (port in use?)"),
    ],
)
def test_tablectl_run_with_its_panel_or_metrics_port_taken_stops_with_one_line(
    tmp_path: Path, taken_port: int, section: str, expected: str
) -> None:
    config = tmp_path / "table.toml"
    config.write_text(
        f"""
[table]
table_id = "bac-01"
game = "baccarat"
data_dir = "{tmp_path / "data"}"
[broker]
url = "mqtt://127.0.0.1:9"
[devices.shoe]
protocol = "shoe-line"
port = "/dev/null"
[{section}]
enabled = true
port = {taken_port}
"""
    )
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "controller.cli", "run", "--config", str(config)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("tablectl: error:")]
    assert errors == [f"tablectl: error: {expected.format(port=taken_port)}"], result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert time.monotonic() - started < 20  # the table stopped: it did not run on without its panel
