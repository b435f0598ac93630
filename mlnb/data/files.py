"""Data files, named as a config names them: one path, a glob pattern of shards, plain or compressed.

The one place where a file name (``data.svmlight.path = "shards/part-*.svm.gz"``) becomes the files
read, in order, and a file becomes a byte stream; the in-memory loaders and the streaming sources
of every format open their files here, so they accept the same names and refuse the same way.
"""

from __future__ import annotations

import bz2
import glob
import gzip
import os
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mlnb.data.hashing import FILE_ID_SHIFT
from mlnb.data.validate import existing_file
from mlnb.errors import MlnbError

GLOB_CHARACTERS = frozenset("*?[")
#: what a read of a compressed file raises when the file is corrupt or cut short
DECOMPRESSION_ERRORS = (OSError, EOFError, zlib.error)


def is_pattern(path) -> bool:
    """Whether ``path`` is a glob pattern (names several files)."""
    return bool(GLOB_CHARACTERS & set(str(path)))


def expand_paths(paths, what: str) -> list[Path]:
    """Files named by ``paths`` (one path or glob pattern, or a list of them), in order; a pattern
    gives its matches sorted by name. One line when a file is missing or a pattern matches none."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    for entry in paths:
        entry = str(entry)
        if is_pattern(entry):
            matches = sorted(Path(p) for p in glob.glob(entry) if Path(p).is_file())
            if not matches:
                raise MlnbError(f"{entry}: no file matches this pattern ({what})")
            files.extend(matches)
        else:
            files.append(existing_file(entry, what))
    if not files:
        raise MlnbError(f"no files given ({what})")
    return files


def open_binary(path: Path):
    """``path`` opened for reading bytes, decompressed when it ends in .gz or .bz2."""
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(Path(path).suffix.lower(), open)
    try:
        return opener(path, "rb")
    except OSError as error:
        raise MlnbError(f"{path}: cannot open ({error.strerror or error})") from None


def file_ids(k: int, n_files: int, n_documents: int, start: int = 0) -> np.ndarray:
    """Ids of documents start .. start + n_documents of file k of a source of n_files files: their
    positions in the file for one file, ``(k << FILE_ID_SHIFT) + position`` for several (see
    :mod:`mlnb.data.stream`)."""
    return (0 if n_files == 1 else k << FILE_ID_SHIFT) + start + np.arange(n_documents, dtype=np.int64)


def source_name(files: Sequence) -> str:
    """A source's label: its file's name, or the first file's marked as the first of n."""
    first = Path(files[0]).name.split(".")[0]
    return first if len(files) == 1 else f"{first} (+{len(files) - 1} files)"
