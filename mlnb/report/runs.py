"""Finding results folders again: ``mlnb runs [FOLDER]`` and the rows of ``index.html``.

A results folder is any folder under the root (at most ``MAX_DEPTH`` levels down: ``root/<name>/
<timestamp>/`` as ``mlnb run --out root`` writes it, the root itself, one name's folder, or a project
folder or its parent above a ``results/``: ``mlnb runs ..`` from a sibling folder) that holds a
``summary.json``; ``.partial-*`` folders (runs still writing, or killed), other hidden folders
(``.git``, ``.venv``) and ``NOT_SEARCHED`` ones are skipped, and the search stops after
``MAX_FOLDERS`` folders (a home folder given by mistake), saying so. Each becomes one ``RunEntry``
read from its summary.json alone: name, when, the data, the models, the headline metric per model
(macro AUC; accuracy for multiclass) and the ``--set`` overrides of the command that made it.

A results root is shared: any folder under it may be damaged, half-copied or hostile. A summary.json
that is not a regular file, is larger than ``MAX_SUMMARY_BYTES``, is not JSON, or holds a value of the
wrong type where the listing reads one (a string, null or list for a count), and a folder that cannot
be searched, is not listed but ``Skipped``, with the reason, so that ``mlnb runs`` and ``index.html``
list every other folder and say which they left out.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

SUMMARY_FILE = "summary.json"
MAX_DEPTH = 6  # root/<name>/<timestamp>/summary.json, under a project folder, under a folder of projects
MAX_FOLDERS = 20_000  # folders searched at most: a data set's or a home folder's tree is not walked whole
NOT_SEARCHED = frozenset({"__pycache__", "node_modules", "site-packages"})  # never hold results, often huge
MAX_SUMMARY_BYTES = 16 * 2**20  # a study's summary.json has tens of kB; a larger one is not read (20 GB links)


@dataclass
class RunEntry:
    """One results folder as ``mlnb runs`` lists it."""

    folder: Path
    kind: str  # run, sweep, curve, compare (or unknown)
    name: str
    created: str  # ISO time of the summary, '' when not recorded
    data: str = ""
    models: list = field(default_factory=list)
    headline: dict = field(default_factory=dict)  # "macro AUC" -> {model: value}, or what the kind headlines
    overrides: list = field(default_factory=list)  # the command's --set key=value (and sweep --param) arguments


def overrides_of(command: str) -> list[str]:
    """The ``--set`` and ``--param`` values of a recorded command line, and ``--quick`` (its own --set), in order."""
    try:
        words = shlex.split(command or "")
    except ValueError:  # unbalanced quotes: a command typed by hand
        words = (command or "").split()
    found = []
    for i, word in enumerate(words):
        if word == "--quick":
            found.append(word)
        for flag in ("--set", "--param"):
            if word == flag and i + 1 < len(words):
                found.append(words[i + 1])
            elif word.startswith(flag + "="):
                found.append(word[len(flag) + 1:])
    return found


def _kind(summary: dict) -> str:
    if isinstance(summary.get("models"), dict):
        return "run"
    if "grid" in summary:
        return "sweep"
    if "crossings" in summary:
        return "curve"
    if "runs" in summary:
        return "compare"
    return "unknown"


class Unreadable(Exception):
    """Why a results folder is not listed, in words (one line)."""


@dataclass
class Skipped:
    """A results folder (its summary.json), or a folder that could not be searched, left out of the listing."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: not listed ({self.reason})"


def _described(value) -> str:
    """What a JSON value is, in words ('a string', 'null'), for a line that says what was expected instead."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), "a number")


_EXPECTED = {"a number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
             "a string": lambda v: isinstance(v, str), "an object": lambda v: isinstance(v, dict)}


def _value(mapping: dict, key: str, expected: str, where: str = "", default=None, null: bool = True):
    """``mapping[key]`` when it is ``expected`` (a key of ``_EXPECTED``); ``default`` when it is absent, or
    null where ``null`` allows it; Unreadable naming ``where + key`` and what it holds otherwise."""
    value = mapping.get(key)
    if key not in mapping or (value is None and null):
        return default
    if not _EXPECTED[expected](value):
        raise Unreadable(f"{where}{key}: expected {expected}, got {_described(value)}")
    return value


def read_summary(path: Path) -> dict:
    """The JSON object of a summary.json, read only when it is a regular file of at most
    ``MAX_SUMMARY_BYTES`` (a FIFO is not waited on, a link to a device or to a 20 GB file is not read);
    Unreadable saying why not."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO: opened, never waited on
        try:
            info = os.fstat(descriptor)  # of what was opened: a link swapped after a check cannot slip through
            if not stat.S_ISREG(info.st_mode):
                raise Unreadable("not a regular file")
            with open(descriptor, "rb", closefd=False) as file:
                raw = file.read(MAX_SUMMARY_BYTES + 1) if info.st_size <= MAX_SUMMARY_BYTES else b""
        finally:
            os.close(descriptor)
    except OSError as error:
        raise Unreadable(error.strerror or str(error)) from None
    if info.st_size > MAX_SUMMARY_BYTES or len(raw) > MAX_SUMMARY_BYTES:
        raise Unreadable(f"{max(info.st_size, len(raw)):,} bytes; a summary.json of more than "
                         f"{MAX_SUMMARY_BYTES // 2**20} MiB is not read")
    try:
        summary = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise Unreadable("not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise Unreadable(f"not JSON: {error.msg} at line {error.lineno}") from None
    except (ValueError, RecursionError) as error:  # an integer of 5,000 digits; arrays nested 10,000 deep
        raise Unreadable(f"not readable JSON ({type(error).__name__})") from None
    if not isinstance(summary, dict):
        raise Unreadable(f"not a JSON object but {_described(summary)}")
    return summary


def _data_text(data: dict) -> str:
    """'reuters, 7,769 train / 3,019 test, 90 categories'."""
    parts = [_value(data, "name", "a string", "data.", "")]
    n_train, n_test, n_categories = (_value(data, key, "a number", "data.", null=False)
                                     for key in ("n_train", "n_test", "n_categories"))
    if n_train is not None and n_test is not None:
        parts.append(f"{n_train:,} train / {n_test:,} test")
    if n_categories is not None:
        parts.append(f"{n_categories:,} categories")
    return ", ".join(p for p in parts if p)


def _metric(mapping: dict, key: str, where: str):
    """A headline value: a number, or null (NaN in the summary: a metric that was not defined)."""
    return _value(mapping, key, "a number", where)


def _headline(kind: str, summary: dict) -> dict:
    """What the folder's kind headlines: per model the macro AUC (and accuracy for multiclass), a
    sweep's best value, a comparison's counts."""
    if kind == "run":
        found = {}
        multiclass = summary.get("task") == "multiclass"
        for metric, title in (("macro_auc", "macro AUC"),) + ((("accuracy", "accuracy"),) if multiclass else ()):
            values = {name: _metric(_value(summary["models"], name, "an object", "models.", {}), metric,
                                    f"models.{name}.") for name in summary["models"]}
            if any(v is not None for v in values.values()):
                found[title] = values
        return found
    best = _value(summary, "best", "an object") if kind == "sweep" else None
    if best is not None:
        metric = _value(summary, "metric", "a string", default="")
        return {f"best {metric}": {_value(summary, "model", "a string", default=""): _metric(best, metric, "best.")}}
    if kind == "compare":
        return {"significantly better": {
            _value(summary, side, "a string", default=side): _metric(summary, f"{side}_significantly_better", "")
            for side in ("a", "b")}}
    return {}


def _models(kind: str, summary: dict) -> list[str]:
    if kind == "run":
        return list(summary["models"])
    if kind == "compare":
        return [_value(summary, side, "a string", default="") for side in ("a", "b")]
    if kind == "sweep":
        return [_value(summary, "model", "a string", default="")]
    return list(_value(summary, "labels", "an object", default={}))


def read_entry(folder: Path) -> RunEntry:
    """The entry of one results folder, read from its summary.json; Unreadable saying why it cannot be
    listed (the file, its JSON, or a value of the wrong type where the listing reads one)."""
    summary = read_summary(folder / SUMMARY_FILE)
    kind = _kind(summary)
    return RunEntry(folder, kind, _value(summary, "name", "a string") or folder.parent.name,
                    _value(summary, "created", "a string", default=""),
                    data=_data_text(_value(summary, "data", "an object", default={})),
                    models=[str(m) for m in _models(kind, summary)], headline=_headline(kind, summary),
                    overrides=overrides_of(_value(summary, "command", "a string", default="")))


def _subfolders(folder: Path) -> list[Path]:
    """The folders in ``folder`` to search next (hidden ones, ``.partial-*`` staging folders and
    ``NOT_SEARCHED`` ones left out; an entry that cannot be looked at is no folder)."""
    with os.scandir(folder) as entries:
        return sorted(folder / entry.name for entry in entries
                      if not entry.name.startswith(".") and entry.name not in NOT_SEARCHED and _is_folder(entry))


def _is_folder(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a link into a folder this process may not look at
        return False


def scan_runs(root) -> tuple[list[RunEntry], list[Skipped]]:
    """Every results folder under ``root`` (the root itself included), oldest first; and every one that
    could not be read, and every folder that could not be searched, with why."""
    root = Path(root)
    if not root.is_dir():
        return [], []
    found, skipped, level, searched = [], [], [root], 0
    for _ in range(MAX_DEPTH + 1):
        deeper = []
        for folder in level:
            searched += 1
            if searched > MAX_FOLDERS:
                skipped.append(Skipped(folder, f"not searched, nor any folder after it: the search stops after "
                                               f"{MAX_FOLDERS:,} folders (name a folder nearer the results)"))
                deeper = []
                break
            if os.path.lexists(folder / SUMMARY_FILE):  # a dangling link or a folder too: named, not passed over
                try:
                    found.append(read_entry(folder))
                except Unreadable as why:
                    skipped.append(Skipped(folder / SUMMARY_FILE, str(why)))
                continue  # a results folder's own sub-folders (plots, curves) are not runs
            try:
                deeper += _subfolders(folder)
            except OSError as error:
                skipped.append(Skipped(folder, f"cannot be searched: {error.strerror or error}"))
        level = deeper
    return sorted(found, key=lambda entry: (entry.created, str(entry.folder))), skipped


def headline_text(entry: RunEntry) -> str:
    """'macro AUC: nb 0.8229, lr 0.8615' (a metric per '; ')."""
    parts = []
    for title, values in entry.headline.items():
        shown = ", ".join(f"{name} {value:.4f}" if isinstance(value, float) else f"{name} {value}"
                          for name, value in values.items() if value is not None)
        parts.append(f"{title}: {shown}")
    return "; ".join(parts)


def runs_frame(entries: list[RunEntry], root: Path) -> pd.DataFrame:
    """The table ``mlnb runs`` prints: one row per results folder, the folder relative to ``root``."""
    rows = [{"folder": (entry.folder.relative_to(root).as_posix() or ".") if entry.folder.is_relative_to(root)
             else str(entry.folder), "kind": entry.kind, "created": entry.created.replace("T", " ")[:19],
             "data": entry.data, "models": ", ".join(entry.models), "headline": headline_text(entry),
             "overrides": " ".join(entry.overrides)} for entry in entries]
    return pd.DataFrame(rows, columns=["folder", "kind", "created", "data", "models", "headline", "overrides"])


def format_runs(frame: pd.DataFrame) -> str:
    """The table as left-aligned text columns (the last one, the overrides, never cut)."""
    columns = list(frame.columns)
    widths = {c: max([len(c)] + [len(str(v)) for v in frame[c]]) for c in columns[:-1]}
    lines = ["  ".join([c.ljust(widths[c]) for c in columns[:-1]] + [columns[-1]]).rstrip()]
    for row in frame.itertuples(index=False):
        lines.append("  ".join([str(v).ljust(widths[c]) for c, v in zip(columns[:-1], row[:-1])]
                               + [str(row[-1])]).rstrip())
    return "\n".join(lines)
