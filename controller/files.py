"""What the service writes is its own: the journal (with its WAL), snapshots and device captures hold the
table's game history, so nobody else on the PC may read them.

`private_umask()` at service start makes every file the process creates 0600 and every directory 0700
(SQLite creates its -wal and -shm files with the journal's mode, captures are opened by the drivers);
`private_dir()` creates the data directory 0700, or tightens an existing one (and what is directly in it:
an older version left the journal 0644) to the same.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077
DIR_MODE = 0o700


def private_umask() -> int:
    """Set the process umask to 077; returns the previous one."""
    return os.umask(PRIVATE_UMASK)


def private_dir(path: Path) -> Path:
    """Create `path` (and its missing parents) mode 0700; an existing one owned by this user, and the entries
    directly in it, lose any group or other access. Raises OSError as mkdir does."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    _tighten(path)
    # what lies deeper (old captures) is out of others' reach once this directory is 0700
    for entry in path.iterdir():
        _tighten(entry)
    return path


def _tighten(path: Path) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid():
        return  # not ours to change (e.g. /var/lib itself, or a file an operator put there)
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        path.chmod(mode & ~0o077)
        log.info("%s was readable by others (mode %o): now %o", path, mode, mode & ~0o077)
