"""What a results folder records about how it was made: versions, git commit (and whether the
working tree had uncommitted changes), command, working directory, and a fingerprint of the input
files; and the config with its paths made absolute, so that the saved ``config.toml`` re-runs the
same study from any working directory.

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
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

MIB = 1 << 20
WHOLE_HASH_BYTES = 4 * MIB  # files up to this size are hashed whole
EDGE_BYTES = MIB  # larger ones: their first and last MiB
MAX_FINGERPRINT_FILES = 1000  # a folder of more files: the first 1000 by name, and the count of all
PATH_KEYS = ("folder", "data_home")  # source options that name a file or folder, besides path and *_path


def versions() -> dict:
    packages = ["mlnb", "numpy", "scipy", "scikit-learn", "pandas", "matplotlib", "typer", "numba"]
    found = {"python": platform.python_version()}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the git checkout mlnb runs from: dirty = tracked files changed since the
    commit; (None, None) outside a checkout (an installed package) or without git."""
    here = Path(__file__).resolve().parent
    # GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE ... in the caller's environment would make git answer for
    # another repository (or index): the commit recorded is the package's own checkout's
    own = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    try:
        commit = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], cwd=here, env=own,
                                capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return None, None
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, env=own, capture_output=True, text=True, timeout=10).stdout.strip()
        return commit.stdout.strip(), bool(dirty)
    except (OSError, subprocess.SubprocessError):
        return None, None


def git_commit() -> str | None:
    """The commit, with '-dirty' when tracked files have changed since."""
    commit, dirty = git_state()
    return None if commit is None else commit + ("-dirty" if dirty else "")


def provenance(command: str | None = None, config=None, fingerprint: dict | None = None) -> dict:
    """When, with what, by which command and from which folder a result was made; with a study
    ``config``, the fingerprint of the files it reads: ``fingerprint``, taken when the run read them
    (``StudyResult.data_fingerprint``), else ``data_fingerprint(config)`` now."""
    commit, dirty = git_state()
    found = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "versions": versions(),
             "git_commit": None if commit is None else commit + ("-dirty" if dirty else ""), "git_dirty": dirty,
             "command": command or " ".join(["mlnb"] + sys.argv[1:]), "working_directory": os.getcwd()}
    if fingerprint is not None:
        found["data_fingerprint"] = fingerprint
    elif config is not None:
        found["data_fingerprint"] = data_fingerprint(config)
    return found


# -- the input files -------------------------------------------------------------------------
def _is_path_key(name: str) -> bool:
    return name == "path" or name.endswith("_path") or name in PATH_KEYS


def _absolute(value: str) -> str:
    """A path (or glob pattern) relative to the working directory, made absolute; '~' paths and
    empty values unchanged (the source expands neither)."""
    return value if not value or value.startswith("~") else os.path.abspath(value)


def with_absolute_paths(config):
    """A copy of the study ``config`` whose data paths (every source option named ``path``,
    ``*_path``, ``folder`` or ``data_home``) are absolute: relative ones are read from the working
    directory, so that is where they are resolved. The copy is what a results folder saves."""
    data = config.data
    changed = {}
    for f in dataclasses.fields(data):
        options = getattr(data, f.name)
        if not dataclasses.is_dataclass(options):
            continue
        paths = {g.name: _absolute(getattr(options, g.name)) for g in dataclasses.fields(options)
                 if _is_path_key(g.name) and isinstance(getattr(options, g.name), str)}
        if any(paths[name] != getattr(options, name) for name in paths):
            changed[f.name] = dataclasses.replace(options, **paths)
    return dataclasses.replace(config, data=dataclasses.replace(data, **changed)) if changed else config


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


def json_safe(value):
    """NaN -> null (strict JSON), numpy scalars -> Python numbers."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value
