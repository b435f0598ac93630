"""What a results folder records about how it was made: versions, git commit (and whether the
working tree had uncommitted changes), command, working directory, and a fingerprint of the input
files; and the config with its paths made absolute, so that the saved ``config.toml`` re-runs the
same study from any working directory.

The data fingerprint is ``mlnb.data.fingerprint``'s, taken when the study reads its data.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

from mlnb.data.fingerprint import _is_path_key, data_fingerprint


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
