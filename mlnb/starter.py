"""``mlnb init DATA``: look at a file or folder, tell what it is, and write a starter config that runs as is.

:func:`detect` asks the registered data sources what the data are (``SourceKind.detect``, beside each source;
:mod:`mlnb.data.detect` holds what their detectors share): the format, the source's options (for a file of texts,
its columns, header and label separator), the categories and the task (``multiclass`` when every document has
exactly one category, else ``multilabel``). Where it cannot decide it refuses in one line naming what it found
and the option to set (``--text-column``, ``--label-column``, ``--label-separator``). :func:`starter_config`
writes the config: the data keys found, a Naive Bayes model (its default event model for counts, one that reads
word presence for other non-negative values: each asked of the registered event models, never named here) and a
logistic one, commented; every other key keeps its default, and ``report.category`` picks a testable category.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mlnb.data.detect import Detected, Hints
from mlnb.errors import MlnbError

__all__ = ["Detected", "Hints", "detect", "starter_config", "summary", "write_starter"]


def detect(data, hints: Hints = Hints()) -> Detected:
    """What ``data`` (a file or folder) holds (:func:`mlnb.data.sources.detect_data`), with the notes on what the
    feature values mean for Naive Bayes; one MlnbError line when it cannot tell."""
    from mlnb.data.sources import detect_data

    found = detect_data(data, hints)
    if found.negative_values:
        found.notes.append("feature values are negative somewhere: Naive Bayes (counts) cannot read them, so "
                           "models.nb is written disabled")
    elif found.presence:
        found.notes.append(f"feature values are not counts (e.g. TF-IDF): Naive Bayes reads word presence "
                           f"(event_model = {_event_model_name(True)!r})")
    return found


def _event_model_name(presence: bool) -> str:
    """The default Naive Bayes kind's event model: its default (counts), or the first registered one that reads
    word presence."""
    from mlnb.config import DEFAULT_MODELS
    from mlnb.models import KINDS
    from mlnb.models.naive_bayes.event_model import REGISTERED

    if presence:
        return next(model.name for model in REGISTERED.values() if model.presence and model.non_negative)
    return KINDS[DEFAULT_MODELS["nb"]].options().event_model


# -- the config --------------------------------------------------------------------------------------------------
def _lr_options(n_documents: int) -> dict:
    """Minibatches that give a small corpus enough updates: 100 documents, 10 passes below 100,000 documents."""
    return {"batch_size": 100, "npasses": 10} if n_documents < 100_000 else {}


def starter_config(found: Detected, data: str, name: str) -> str:
    """The TOML text of a config that runs ``found`` as is: NB and LR, every other key at its default. What the
    data named (its path, categories, columns) is written by toml_value or in toml_comment: escaped, so that no
    name can end a string or a comment and write a key of its own."""
    from mlnb.config import DEFAULT_MODELS, toml_comment, toml_key, toml_value

    shown = ", ".join(f"{k if len(k) <= 80 else k[:80] + '...'} ({n:,})"
                      for k, n in list(found.documents_per_category.items())[:8])
    more = f" and {found.n_categories - 8:,} more" if found.n_categories > 8 else ""
    comments = [f"Starter config written by `mlnb init {data}`: it runs as is (`mlnb run <this file>`);",
                "every key not given here keeps its default (`mlnb show-config <this file>` lists them all).",
                f"Detected: {found.format}; {found.n_documents:,} documents, {found.n_categories:,} categories:",
                f"  {shown}{more}."]
    comments += [f"Note: {note}." for note in found.notes]
    comments += ["Paths are read from the working directory, as you gave them to `mlnb init`."]
    task = ("every document has exactly one category (\"multilabel\": each category one-vs-rest)"
            if found.task == "multiclass" else "each category one-vs-rest (documents have none, one or more)")
    lines = [toml_comment(line) for line in comments]
    lines += [f"name = {toml_value(name, 'name')}", "seed = 0",
              f"task = {toml_value(found.task)}  " + toml_comment(task), "", "[data]",
              f"source = {toml_value(found.source)}"]
    if "test_path" not in found.options:
        lines.append("test_fraction = 0.5  " + toml_comment("share of the documents held out for the test (a seeded "
                                                           "hash of each id)"))
    table = f"data.{toml_key(found.source)}"
    lines += ["", f"[{table}]"]
    for key, value in found.options.items():
        why = found.why.get(key) or ("the separator of the labels in a cell" if key == "label_separator" else "")
        lines.append(f"{toml_key(key)} = {toml_value(value, f'{table}.{key}')}" + ("  " + toml_comment(why) if why
                                                                                   else ""))
    lines += ["", "[models.nb]", f"kind = {toml_value(DEFAULT_MODELS['nb'])}",
              f"event_model = {toml_value(_event_model_name(found.presence))}"]
    if found.negative_values:
        lines.append("enabled = false  " + toml_comment("negative feature values: Naive Bayes needs counts or "
                                                       "presence"))
    lines += ["", "[models.lr]", f"kind = {toml_value(DEFAULT_MODELS['lr'])}"]
    lines += [f"{key} = {toml_value(value)}" for key, value in _lr_options(found.n_documents).items()]
    lines += ["", "[report]",
              toml_comment("category = -1 (the default) plots the most frequent category that can be tested; name "
                           "one with"),
              toml_comment("category_name = \"...\"")]
    return "\n".join(lines) + "\n"


def summary(found: Detected, split: str) -> list[str]:
    """What ``mlnb init`` prints: what it detected, one fact a line."""
    per = "one per document" if found.labels_per_document == "one" else "none, one or several per document"
    lines = [f"format: {found.format}", f"documents: {found.n_documents:,}",
             f"categories: {found.n_categories:,} ({per}; task = {found.task!r})"]
    if "header" in found.why:
        lines.append(f"header: {'yes' if found.options.get('header') else 'no'}, {found.why['header']}")
    if found.label_column:  # a file of texts, or a labels file
        lines.append(f"label column: {found.label_column!r}" + (f"; {found.why['label_column']}"
                                                                 if "label_column" in found.why else ""))
        lines.append("label separator: " + (repr(found.separator) if found.separator else "none (one label per cell, "
                                                                                          "or JSON lists)"))
    lines.append(f"split: {split}")
    lines += [f"note: {note}" for note in found.notes]
    return lines


def write_starter(data, out, hints: Hints = Hints(), overwrite: bool = False) -> tuple[Path, list[str]]:
    """Detect ``data``, write the starter config to ``out`` (checked by loading it back), and return
    (the config's path, the lines to print)."""
    from mlnb.config import load_config
    from mlnb.data.sources import describe_split

    out = Path(out)
    if out.exists() and not overwrite:
        raise MlnbError(f"{out}: exists; choose another --out or add --force to replace it")
    if out.suffix.lower() != ".toml":
        raise MlnbError(f"--out {out}: expected a .toml file name")
    found = detect(data, hints)
    stem = Path(str(data).rstrip("/\\")).name.split(".")[0]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", re.sub(r"[-_.]?train(ing)?$", "", stem)).strip("-.") or "study"
    text = starter_config(found, str(data), stem[:60])
    out.parent.mkdir(parents=True, exist_ok=True)
    staged = out.with_name(f".{out.name}.partial")
    staged.write_text(text, encoding="utf-8")
    try:
        config = load_config(staged)
    except MlnbError as error:
        staged.unlink()
        raise MlnbError(f"the starter config for {data} does not load ({error}); please report this") from None
    os.replace(staged, out)
    return out, summary(found, describe_split(config.data, config.data_seed()))
