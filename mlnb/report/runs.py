"""Finding results folders again: ``mlnb runs [FOLDER]`` and the rows of ``index.html``.

A results folder is any folder under the root (at most ``MAX_DEPTH`` levels down: ``root/<name>/
<timestamp>/`` as ``mlnb run --out root`` writes it, the root itself, or one name's folder) that
holds a ``summary.json``; ``.partial-*`` folders (runs still writing, or killed) and other hidden
folders are skipped. Each becomes one ``RunEntry`` read from its summary.json alone: name, when,
the data, the models, the headline metric per model (macro AUC; accuracy for multiclass) and the
``--set`` overrides of the command that made it.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

SUMMARY_FILE = "summary.json"
MAX_DEPTH = 3  # root/<name>/<timestamp>/summary.json, and a folder of such roots


@dataclass
class RunEntry:
    """One results folder as ``mlnb runs`` lists it."""

    folder: Path
    kind: str  # run, sweep, curve, compare; 'unreadable' for a damaged summary.json
    name: str
    created: str  # ISO time of the summary, '' when not recorded
    data: str = ""
    models: list = field(default_factory=list)
    headline: dict = field(default_factory=dict)  # "macro AUC" -> {model: value}, or what the kind headlines
    overrides: list = field(default_factory=list)  # the command's --set key=value (and sweep --param) arguments


def overrides_of(command: str) -> list[str]:
    """The ``--set`` and ``--param`` values of a recorded command line, in order."""
    try:
        words = shlex.split(command or "")
    except ValueError:  # unbalanced quotes: a command typed by hand
        words = (command or "").split()
    found = []
    for i, word in enumerate(words):
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


def _data_text(data) -> str:
    if not isinstance(data, dict):
        return ""
    parts = [str(data.get("name", ""))]
    if "n_train" in data and "n_test" in data:
        parts.append(f"{data['n_train']:,} train / {data['n_test']:,} test")
    if "n_categories" in data:
        parts.append(f"{data['n_categories']:,} categories")
    return ", ".join(p for p in parts if p)


def _headline(kind: str, summary: dict) -> dict:
    """What the folder's kind headlines: per model the macro AUC (and accuracy for multiclass), a
    sweep's best value, a comparison's counts."""
    if kind == "run":
        found = {}
        multiclass = summary.get("task") == "multiclass"
        for metric, title in (("macro_auc", "macro AUC"),) + ((("accuracy", "accuracy"),) if multiclass else ()):
            values = {name: model.get(metric) for name, model in summary["models"].items() if isinstance(model, dict)}
            if any(isinstance(v, (int, float)) for v in values.values()):
                found[title] = values
        return found
    if kind == "sweep" and isinstance(summary.get("best"), dict):
        metric = summary.get("metric", "")
        return {f"best {metric}": {summary.get("model", ""): summary["best"].get(metric)}}
    if kind == "compare":
        return {"significantly better": {summary.get("a", "a"): summary.get("a_significantly_better"),
                                         summary.get("b", "b"): summary.get("b_significantly_better")}}
    return {}


def read_entry(folder: Path) -> RunEntry:
    """The entry of one results folder, read from its summary.json (a damaged one: kind 'unreadable')."""
    try:
        summary = json.loads((folder / SUMMARY_FILE).read_text(encoding="utf-8"))
        if not isinstance(summary, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError, RecursionError) as error:
        return RunEntry(folder, "unreadable", folder.parent.name, "", data=f"({SUMMARY_FILE}: {type(error).__name__})")
    kind = _kind(summary)
    models = list(summary["models"]) if kind == "run" else (
        [summary.get("a", ""), summary.get("b", "")] if kind == "compare" else
        [str(summary.get("model", ""))] if kind == "sweep" else list(summary.get("labels", {}) or {}))
    return RunEntry(folder, kind, str(summary.get("name") or folder.parent.name), str(summary.get("created", "")),
                    data=_data_text(summary.get("data")), models=[str(m) for m in models],
                    headline=_headline(kind, summary), overrides=overrides_of(str(summary.get("command", ""))))


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def find_runs(root) -> list[RunEntry]:
    """Every results folder under ``root`` (the root itself included), oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found, level = [], [root]
    for _ in range(MAX_DEPTH + 1):
        deeper = []
        for folder in level:
            if (folder / SUMMARY_FILE).is_file():
                found.append(read_entry(folder))
                continue  # a results folder's own sub-folders (plots, curves) are not runs
            try:
                deeper += sorted(p for p in folder.iterdir() if p.is_dir() and not _hidden(p, root))
            except OSError:  # unreadable: skipped, as `ls` would say
                continue
        level = deeper
    return sorted(found, key=lambda entry: (entry.created, str(entry.folder)))


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
