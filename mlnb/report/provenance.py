"""What a results folder records about how it was made: versions, git commit, command."""

from __future__ import annotations

import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np


def versions() -> dict:
    packages = ["mlnb", "numpy", "scipy", "scikit-learn", "pandas", "matplotlib", "typer", "numba"]
    found = {"python": platform.python_version()}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                                text=True, timeout=10)
        if commit.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return commit.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def provenance(command: str | None = None) -> dict:
    """When, with what and by which command a result was made."""
    return {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "versions": versions(), "git_commit": git_commit(),
            "command": command or " ".join(["mlnb"] + sys.argv[1:])}


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
