"""How the demo tests run `tablectl demo`: as the user does, in a subprocess, several side by side (each has
its own broker, pty and data directory). A demo still running after its time fails the test with what it
published and logged, not a bare timeout (pytest-timeout's 120 s would kill it with neither). Needs pytest."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

#: the repository: the demos run from it, so `-m controller.cli` runs this checkout
ROOT = Path(__file__).resolve().parents[2]
#: under pytest-timeout's 120 s, so that a stuck demo's output is shown (a demo round takes 3-15 s)
DEMO_TIMEOUT = 100.0


def demo_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "controller.cli", "demo", *args]


def finish(process: subprocess.Popen[str], timeout: float = DEMO_TIMEOUT) -> tuple[str, str]:
    """The demo's stdout and stderr once it ended with exit code 0; otherwise the test fails with its last
    events and its log."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        kinds = [json.loads(line)["type"] for line in stdout.splitlines() if line.startswith("{")]
        pytest.fail(
            f"the demo did not finish in {timeout:.0f} s: events {kinds[-12:]}, log:\n{stderr[-3000:]}"
        )
    assert process.returncode == 0, stderr[-3000:]
    return stdout, stderr


def run_demos(commands: dict[str, list[str]], timeout: float = DEMO_TIMEOUT) -> dict[str, tuple[str, str]]:
    """Run the demos side by side (half the wait) and return each one's stdout and stderr."""
    running = {
        name: subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, command in commands.items()
    }
    try:
        # read all at once: a demo blocked on a full pipe would stall its whole event loop
        with ThreadPoolExecutor(len(running)) as pool:
            outputs = {name: pool.submit(finish, p, timeout) for name, p in running.items()}
            return {name: future.result() for name, future in outputs.items()}
    finally:
        for process in running.values():
            if process.poll() is None:
                process.kill()
                process.wait()


def run_demo(*args: str, timeout: float = DEMO_TIMEOUT) -> tuple[str, str]:
    return run_demos({"demo": demo_command(*args)}, timeout)["demo"]
