"""The one gate every data file passes before a reader opens it: a readable regular file, or one line.

Opening a FIFO for reading blocks until a writer comes, a character device (``/dev/zero``) never
ends, a socket cannot be opened at all: each is told from ``os.stat``, which opens nothing, and
refused in one line naming the path and what it is, before any reader opens it. Every reader and
``mlnb init``'s detection open their files through :func:`open_regular` (or check them with
:func:`check_regular` first, where a library opens the file), a folder's documents and a glob's
files each one by one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from mlnb.errors import MlnbError

#: what a file that is not regular is, by the test of its mode
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def special_kind(mode: int) -> str | None:
    """What a file of ``mode`` (``st_mode``) is when it is neither a regular file nor a directory, else None."""
    return next((kind for test, kind in _KINDS if test(mode)), None)


def check_regular(path, what: str) -> Path:
    """``path`` as a Path when it is a regular file that this process may read (symbolic links followed);
    else one line naming it, what it is instead (no such file, a directory, a FIFO, a socket, a device,
    unreadable) and ``what`` was expected there."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise MlnbError(f"{path}: no such file ({what})") from None
    except OSError as error:  # a folder on the way that cannot be searched, a loop of links, ...
        raise MlnbError(f"{path}: cannot read ({error.strerror or error}) ({what})") from None
    if stat.S_ISDIR(mode):
        raise MlnbError(f"{path}: is a directory; expected a file ({what})")
    if not stat.S_ISREG(mode):
        raise MlnbError(f"{path}: is {special_kind(mode) or 'not a file'}, not a regular file ({what})")
    if not os.access(path, os.R_OK):
        raise _unreadable(path, what)
    return path


def open_regular(path, what: str):
    """``path`` opened for reading bytes once :func:`check_regular` passes it; an error of the opening in
    the same one line."""
    path = check_regular(path, what)
    try:
        return open(path, "rb")
    except PermissionError:
        raise _unreadable(path, what) from None
    except OSError as error:
        raise MlnbError(f"{path}: cannot read ({error.strerror or error}) ({what})") from None


def _unreadable(path: Path, what: str) -> MlnbError:
    return MlnbError(f"{path}: permission denied: this user may not read it ({what})")
