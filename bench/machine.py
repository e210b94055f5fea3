"""What every benchmark report says about where it ran: the CPU, the OS, and the commit measured."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def os_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text(encoding="utf-8").splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    return platform.platform()


def machine(**versions: Any) -> dict[str, Any]:
    """The machine a report ran on: CPU, cores, Python, OS, and the versions of what else was measured."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "os": os_name(),
        **versions,
    }


def git_commit(measured: Sequence[str] = ()) -> str | None:
    """HEAD, and whether the code measured differs from it: the files `measured` (repository paths; none:
    every tracked file) edited, or not committed at all. None outside a git checkout."""
    status = ["git", "status", "--porcelain"]
    status += ["--", *measured] if measured else ["--untracked-files=no"]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        changed = subprocess.run(
            status, cwd=REPO_ROOT, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}{' (the code measured is not committed as it is)' if changed else ''}"
