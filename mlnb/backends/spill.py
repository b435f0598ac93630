"""The folders that hold a streamed study's test scores on disk (``engine.spill_folder``): checked before
a study starts, and those of processes that died without removing theirs (SIGKILL, power loss) removed.

A spill folder is named ``mlnb-scores-<pid>@<host>-<random>`` (``spill_prefix``): the process that made
it and the machine it runs on. At the start of a command, ``clean_stale_spills`` removes the folders of
this machine whose process is gone; it leaves alone every folder of another machine (a spill folder a
cluster shares), of a process that still runs (or whose number a new process took), of another user,
and every name it cannot read a process from (``mlnb-scores-<random>`` of earlier versions): only
what is certainly stale is removed, and never through a symbolic link.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import tempfile
from pathlib import Path

from mlnb.errors import MlnbError

SPILL_PREFIX = "mlnb-scores-"
_STALE = re.compile(re.escape(SPILL_PREFIX) + r"(\d{1,10})@([A-Za-z0-9.-]{1,64})-[A-Za-z0-9_]+")


def _host() -> str:
    return (re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()) or "host")[:64]


def spill_prefix() -> str:
    """The prefix of a spill folder this process makes: ``tempfile.mkdtemp(prefix=spill_prefix(), ...)``."""
    return f"{SPILL_PREFIX}{os.getpid()}@{_host()}-"


def spill_root(folder: str) -> Path:
    """Where spill folders go: ``engine.spill_folder``, or the system's temporary folder when empty."""
    return Path(folder) if folder else Path(tempfile.gettempdir())


def check_spill_folder(folder: str) -> None:
    """Raise MlnbError unless a spill folder can be made in ``folder`` (``engine.spill_folder``; empty =
    the system's temporary folder): before any data is read, as ``check_writable`` does for ``--out``."""
    root = spill_root(folder)
    key = f"engine.spill_folder = {folder!r}" if folder else f"the temporary folder {str(root)!r} (engine.spill_folder)"
    if not root.is_dir():
        raise MlnbError(f"{key}: no such folder")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=spill_prefix(), dir=root))
    except OSError as error:
        raise MlnbError(f"{key}: cannot write the test scores there ({error.strerror or error})") from None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):  # another user's process (alive), or no valid pid
        return pid > 0
    return True


def clean_stale_spills(folder: str) -> list[Path]:
    """Remove the spill folders in ``folder`` (``engine.spill_folder``; empty = the system's temporary
    folder) that processes of this machine, now dead, left behind; return them. Never raises: a folder
    that cannot be listed or removed is left as it is."""
    root, host, removed = spill_root(folder), _host(), []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        match = _STALE.fullmatch(entry.name)
        if match is None or match.group(2) != host:
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or _alive(pid):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():  # a link, a file, another user's
            continue
        path = Path(entry.path)
        shutil.rmtree(path, ignore_errors=True)  # does not follow links inside (os.open with O_NOFOLLOW)
        if not os.path.lexists(path):
            removed.append(path)
    return removed
