"""Results folders written atomically.

A folder is written under a hidden temporary name (``.partial-*``) and renamed
to its timestamped name only when complete, so a failed run never leaves a
folder that looks done.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from mlnb.errors import MlnbError


class Staging:
    """A hidden folder to write into, and the final name it got (set on success)."""

    def __init__(self, path: Path):
        self.path = path
        self.final: Path | None = None


def _claim(parent: Path, stamp: str) -> Path:
    """Create and return a new empty folder parent/stamp (or stamp-2, -3, ...)."""
    for n in range(1, 1000):
        final = parent / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            final.mkdir()
            return final
        except FileExistsError:
            continue
    raise MlnbError(f"{parent}: cannot find a free results folder name for {stamp}")


@contextmanager
def atomic_folder(root: Path, name: str):
    """Yield a hidden staging folder; on success move it to a new timestamped one."""
    parent = root / name
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Staging(Path(tempfile.mkdtemp(prefix=".partial-", dir=parent)))
    except OSError as error:
        raise MlnbError(f"{parent}: cannot create the results folder ({error.strerror or error})") from None
    try:
        yield staging
        final = _claim(parent, time.strftime("%Y%m%d-%H%M%S"))
        staging.path.replace(final)  # onto the empty folder just claimed: atomic
        umask = os.umask(0)
        os.umask(umask)
        final.chmod(0o777 & ~umask)  # mkdtemp made it private; results are for everyone
        staging.final = final
    except BaseException as error:
        shutil.rmtree(staging.path, ignore_errors=True)
        if isinstance(error, OSError):
            raise MlnbError(f"{parent}: cannot write the results ({error.strerror or error})") from None
        raise
