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
from mlnb.data.regular import check_regular
from mlnb.data.validate import existing_file
from mlnb.errors import MlnbError

GLOB_CHARACTERS = frozenset("*?[")
#: what a read of a compressed file raises when the file is corrupt or cut short
DECOMPRESSION_ERRORS = (OSError, EOFError, zlib.error)
#: how compressed files begin (no text file does: gzip's 0x1f and the others' bytes are no text's first
#: characters), what each is called, and the name ending under which mlnb reads it (None: not read)
COMPRESSED_STARTS = ((b"\x1f\x8b", "gzip-compressed data", ".gz"), (b"PK\x03\x04", "a zip archive", None),
                     (b"\xfd7zXZ\x00", "xz-compressed data", None),
                     (b"\x28\xb5\x2f\xfd", "zstd-compressed data", None))
_BZIP2_BLOCK_STARTS = (b"1AY&SY", b"\x17rE8P\x90")  # a bzip2 file: 'BZh', the level 1-9, then one of these


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
            # a folder that the pattern matches is no file of it; a FIFO or device is refused, not skipped
            matches = sorted(check_regular(p, what) for p in glob.glob(entry) if not os.path.isdir(p))
            if not matches:
                raise MlnbError(f"{entry}: no file matches this pattern ({what})")
            files.extend(matches)
        else:
            files.append(existing_file(entry, what))
    if not files:
        raise MlnbError(f"no files given ({what})")
    return files


def open_binary(path: Path, what: str = "data file"):
    """``path`` opened for reading bytes, decompressed when it ends in .gz or .bz2; refused in one line
    first when it is not a readable regular file (:func:`mlnb.data.regular.check_regular`)."""
    check_regular(path, what)
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(Path(path).suffix.lower(), open)
    try:
        stream = opener(path, "rb")
    except OSError as error:
        raise MlnbError(f"{path}: cannot open ({error.strerror or error})") from None
    try:
        head = stream.read(16) if opener is open else b""
        stream.seek(0)
    except OSError as error:
        stream.close()
        raise MlnbError(f"{path}: cannot open ({error.strerror or error})") from None
    compressed = compression_of(head)
    if compressed is not None:  # read as text it would be undecodable bytes, and advice to change the encoding
        stream.close()
        what_it_is, suffix = compressed
        raise MlnbError(f"{path}: looks like {what_it_is} (by its first bytes), but its name does not say so; "
                        + (f"name it {Path(path).name}{suffix} to have it read as such" if suffix else
                           "unpack it (mlnb reads plain, .gz and .bz2 files)"))
    return stream


def compression_of(head: bytes) -> tuple[str, str | None] | None:
    """(what it is, the name ending under which mlnb reads it, or None) when ``head``, the first bytes of a
    file, begin as a compressed file's do: ('gzip-compressed data', '.gz'); None for any other file."""
    for start, what_it_is, suffix in COMPRESSED_STARTS:
        if head.startswith(start):
            return what_it_is, suffix
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[3:4] != b"0" and head[4:10] in _BZIP2_BLOCK_STARTS:
        return "bzip2-compressed data", ".bz2"
    return None


def file_ids(k: int, n_files: int, n_documents: int, start: int = 0) -> np.ndarray:
    """Ids of documents start .. start + n_documents of file k of a source of n_files files: their
    positions in the file for one file, ``(k << FILE_ID_SHIFT) + position`` for several (see
    :mod:`mlnb.data.stream`)."""
    return (0 if n_files == 1 else k << FILE_ID_SHIFT) + start + np.arange(n_documents, dtype=np.int64)


def source_name(files: Sequence) -> str:
    """A source's label: its file's name, or the first file's marked as the first of n."""
    first = Path(files[0]).name.split(".")[0]
    return first if len(files) == 1 else f"{first} (+{len(files) - 1} files)"
