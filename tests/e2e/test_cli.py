"""The CLI's operator errors through `tablectl run` in its own process: one line on stderr, non-zero exit,
never a traceback.

Its e2e tests; the unit ones are in `tests/unit/core/test_cli.py`, the integration ones in
`tests/integration/test_cli.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import GOOD, tablectl, write

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("protocol", "port", "expected"),
    [
        ("shoe-xml", "/dev/null", "devices.shoe.protocol: unknown protocol 'shoe-xml'"),
        ("shoe-line", "/dev/tablectl-no-such-shoe", "serial port /dev/tablectl-no-such-shoe not found"),
    ],
)
def test_run_fails_with_one_clear_line(tmp_path: Path, protocol: str, port: str, expected: str) -> None:
    config = write(tmp_path, GOOD.format(data=tmp_path, protocol=protocol, port=port))
    result = tablectl("run", "--config", config)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tablectl: error: ")
    assert expected in lines[0]
    assert "Traceback" not in result.stderr


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    result = tablectl("run", "--config", write(tmp_path, "[table\n"))
    assert result.returncode == 2 and "not valid TOML" in result.stderr and "Traceback" not in result.stderr
    result = tablectl("run", "--config", str(tmp_path / "nope.toml"))
    assert result.returncode == 2 and "no such config file" in result.stderr


def test_unusable_data_dir_is_one_clear_line(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data directory should be")
    config = write(tmp_path, GOOD.format(data=blocker, protocol="shoe-line", port="/dev/null"))
    result = tablectl("run", "--config", config)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("tablectl: error: table.data_dir ")
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_run_with_a_mistyped_option_is_one_clear_line(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        GOOD.format(data=tmp_path, protocol="shoe-line", port="/dev/null")
        + "[devices.shoe.options]\nwatchdg = 5\n",
    )
    result = tablectl("run", "--config", config)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"tablectl: error: {config}: devices.shoe.options.watchdg: Extra inputs are not permitted"
    ]
