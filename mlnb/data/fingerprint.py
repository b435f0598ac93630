"""A fingerprint of the files a study's data source reads, taken when the study reads them (a file
replaced or deleted afterwards is not recorded as read).

Data fingerprint: per input file its size, modification time and SHA-256. A file of at most
``WHOLE_HASH_BYTES`` is hashed whole; a larger one by its first and last ``EDGE_BYTES`` only
(``"hashed": "first and last MiB"``), so that fingerprinting a 10 GB corpus costs two reads of a
MiB, not a pass over it: a change in the middle of a large file that keeps its size is not seen
(its modification time usually is). ``digest`` is one SHA-256 over every file's name, size and hash:
two runs read the same data when their digests are equal.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import os
import time
from pathlib import Path

MIB = 1 << 20
WHOLE_HASH_BYTES = 4 * MIB  # files up to this size are hashed whole
EDGE_BYTES = MIB  # larger ones: their first and last MiB
MAX_FINGERPRINT_FILES = 1000  # a folder of more files: the first 1000 by name, and the count of all
PATH_KEYS = ("folder", "data_home")  # source options that name a file or folder, besides path and *_path


def _is_path_key(name: str) -> bool:
    return name == "path" or name.endswith("_path") or name in PATH_KEYS


def input_files(config) -> list[Path]:
    """The files the active data source of ``config`` reads (its path options expanded: a glob's
    matches, a folder's files), sorted and without repeats."""
    options = getattr(config.data, config.data.source, None)
    if not dataclasses.is_dataclass(options):
        return []
    found = set()
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if not (_is_path_key(f.name) and isinstance(value, str) and value):
            continue
        value = os.path.expanduser(value)
        for match in (glob.glob(value, recursive=True) if glob.has_magic(value) else [value]):
            path = Path(match)
            if path.is_dir():
                found.update(p for p in path.rglob("*") if p.is_file())
            elif path.is_file():
                found.add(path)
    return sorted(found)


def file_fingerprint(path: Path) -> dict:
    """Size, modification time and SHA-256 of one file: whole up to ``WHOLE_HASH_BYTES``, else of its
    first and last ``EDGE_BYTES``."""
    stat = path.stat()
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        if stat.st_size <= WHOLE_HASH_BYTES:
            digest.update(file.read())
            hashed = "whole"
        else:
            digest.update(file.read(EDGE_BYTES))
            file.seek(-EDGE_BYTES, os.SEEK_END)
            digest.update(file.read(EDGE_BYTES))
            hashed = "first and last MiB"
    return {"path": os.path.abspath(path), "size": stat.st_size,
            "modified": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(stat.st_mtime)),
            "sha256": digest.hexdigest(), "hashed": hashed}


def data_fingerprint(config) -> dict:
    """The fingerprint of the files ``config``'s data source reads: one entry per file (at most
    ``MAX_FINGERPRINT_FILES``), their number and one ``digest`` of them all. A generated source
    (synthetic, bundled) reads no file: its config and seed are its fingerprint."""
    files = input_files(config)
    entries = []
    for path in files[:MAX_FINGERPRINT_FILES]:
        try:
            entries.append(file_fingerprint(path))
        except OSError as error:  # removed or unreadable since the run read it: say so, do not fail the run
            entries.append({"path": os.path.abspath(path), "error": error.strerror or str(error)})
    digest = hashlib.sha256()
    for entry in entries:
        digest.update(f"{Path(entry['path']).name}\t{entry.get('size')}\t{entry.get('sha256')}\n".encode())
    return {"source": config.data.source, "n_files": len(files), "files": entries,
            "digest": digest.hexdigest() if entries else None,
            "method": f"size, modification time and SHA-256 per file (whole up to {WHOLE_HASH_BYTES // MIB} MiB, "
                      "else of its first and last MiB)"}
