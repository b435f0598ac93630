"""Results folders written atomically.

A folder is written under a hidden temporary name (``.partial-*``) and renamed
to its timestamped name only when complete, so a failed run never leaves a
folder that looks done. ``check_writable`` tries the same steps before a study
starts, so that a bad ``--out`` fails in a second rather than after the study.

Every results folder of every command goes through ``atomic_folder``, so it is also where the pages
are made that no writer should forget: a folder's ``report.md`` becomes its self-contained
``report.html`` (last, before the rename), and the root's ``index.html`` is rewritten once the
folder has its final name (``mlnb.report.html``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from mlnb.errors import MlnbError


#: the results folders this process moved into place, complete, in order: an interrupt that comes after the
#: command's folder is there (while the index page is rewritten, or the summary printed) finds its work done
completed: list[Path] = []


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


def check_writable(root: Path, name: str) -> None:
    """Raise MlnbError unless ``root/name`` is, or can be made, a folder to write results into.

    Does what ``atomic_folder`` will do (create the folders, a ``.partial-*`` staging folder in
    ``root/name``) and undoes it: the file system is left as found, whether the check passes or
    fails, so a study that fails later (on its data) leaves no empty folder either;
    ``atomic_folder`` creates ``root/name`` again when the results are written.
    """
    parent = Path(root) / name
    missing = []  # innermost first: the order to remove them in
    ancestor = parent
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        missing.append(ancestor)
        ancestor = ancestor.parent
    created = []  # innermost first, as `missing`
    try:
        for folder in reversed(missing):
            try:
                folder.mkdir()
            except FileExistsError:  # 'x/..' once 'x' is made (--out a/x/../../y): there already
                if not folder.is_dir():
                    raise
                continue
            created.insert(0, folder)
        os.rmdir(tempfile.mkdtemp(prefix=".partial-", dir=parent))
    except OSError as error:
        raise MlnbError(f"{parent}: cannot create the results folder ({error.strerror or error})") from None
    finally:
        for folder in created:
            try:
                folder.rmdir()
            except OSError:  # never created, or someone else wrote into it meanwhile
                pass


@contextmanager
def atomic_folder(root: Path, name: str):
    """Yield a hidden staging folder; on success move it to a new timestamped one."""
    parent = root / name
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Staging(Path(tempfile.mkdtemp(prefix=".partial-", dir=parent)))
    except OSError as error:
        raise MlnbError(f"{parent}: cannot create the results folder ({error.strerror or error})") from None
    final = None
    try:
        yield staging
        if (staging.path / "report.md").is_file():
            from mlnb.report.html import write_report_html  # pandas (for the index): not for check_writable

            write_report_html(staging.path)  # last: it links the folder's files
        umask = os.umask(0)
        os.umask(umask)
        staging.path.chmod(0o777 & ~umask)  # mkdtemp made it private; results are for everyone
        final = _claim(parent, time.strftime("%Y%m%d-%H%M%S"))
        staging.path.replace(final)  # onto the empty folder just claimed: atomic, and the folder is complete
        staging.final = final
        completed.append(final)
    except BaseException as error:  # KeyboardInterrupt and the CLI's SIGTERM exception too
        if final is not None and not os.path.lexists(staging.path):  # moved into place: complete, kept
            if final not in completed:  # the interrupt came between the move and its record
                completed.append(final)
            raise
        if final is not None:  # claimed, not yet moved onto
            try:
                final.rmdir()
            except OSError:
                pass
        shutil.rmtree(staging.path, ignore_errors=True)
        if isinstance(error, OSError):
            raise MlnbError(f"{parent}: cannot write the results ({error.strerror or error})") from None
        raise
    from mlnb.report.html import refresh_index

    refresh_index(root)
