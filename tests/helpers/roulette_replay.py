"""What the tests of `test_roulette_replay`, split by kind, share:
`tests/unit/games/roulette/test_roulette_replay.py`, `tests/integration/test_roulette_replay.py`."""

from __future__ import annotations

import json
from pathlib import Path


def jsonl(path: Path, lines: list[tuple[float, str]], end: str = "\r\n") -> Path:
    with path.open("w") as out:
        for t, text in lines:
            out.write(json.dumps({"t": t, "dir": "rx", "data": text + end}) + "\n")
    return path
