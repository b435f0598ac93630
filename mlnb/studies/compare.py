"""Paired comparison of models saved in results folders (``mlnb compare``).

The test itself (DeLong per category, Holm, sign test) is ``mlnb.metrics.comparison``;
the scores file is ``mlnb.scores``. Here: pairing two saved models and checking
that they were evaluated on the same test documents.

Names: models of two runs are named ``<run>:<model>`` (``run_tags``: the shortest tail of each
folder's path that tells the two apart, e.g. ``20261126-083107:lr`` against
``20261126-091500:lr``) in the legend, the axis, the tables and the summary; models of one run
keep their names. ``default_pair`` picks the pair ``mlnb compare`` compares when none is named,
never two identical models (the same kind, options and seed, on the same data and features: their
scores would be equal); ``config_diff`` lists what differs between the two, for the top of the
report. ``load_scores`` reads the file
(``mlnb.scores.load_scores``) and passes every model's scores through the metrics' own
check (``mlnb.metrics._inputs.score_array``), naming the file and the model: a scores file
holds whatever its writer put there, and no value of it may reach the compiled kernels
unchecked (float16 becomes float32, int64 only when exact in float64, NaN is refused).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np

from mlnb import scores as scores_file
from mlnb.errors import MlnbError
from mlnb.metrics._inputs import score_array
from mlnb.metrics.comparison import Comparison, compare_scores
from mlnb.metrics.multiclass import class_log_odds
from mlnb.metrics.significance import mcnemar_test
from mlnb.scores import SavedRun
from mlnb.tracking import flatten

__all__ = ["compare_runs", "config_diff", "default_pair", "load_scores", "run_tags"]

# the parts of a run's config that do not change a model's test scores (what is reported, other commands)
NOT_SCORING = ("name", "report", "sweep", "curve", "bench", "tracking", "engine")
# a model table's keys that do not change its scores
NOT_SCORING_MODEL_KEYS = ("label", "enabled", "decision")


def _checked_scores(run: SavedRun, where: str) -> SavedRun:
    """``run`` with each model's scores through ``score_array`` (converted where exact), or MlnbError
    naming ``where`` and the model."""
    shape = run.Y_test.shape
    for key, values in list(run.scores.items()):
        try:
            run.scores[key] = score_array(values, f"scores_{key}", ndim=2, shape=shape)
        except MlnbError as error:
            raise MlnbError(f"{where}: model {key!r}: {error}") from None
    return run


def load_scores(folder) -> SavedRun:
    """The saved run of a complete results folder (``mlnb.scores.load_scores``), its scores checked as
    the metrics check them; MlnbError naming the scores file and the model otherwise."""
    return _checked_scores(scores_file.load_scores(folder), str(Path(folder) / scores_file.SCORES_FILE))


def compare_runs(run_a: SavedRun, key_a: str, run_b: SavedRun, key_b: str, alpha: float = 0.05) -> Comparison:
    if run_a is run_b and key_a == key_b:
        raise MlnbError(f"{run_a.folder}: model {key_a!r} against itself; name the other with --model-b "
                        f"(it has {', '.join(run_a.scores)})")
    for run, key in ((run_a, key_a), (run_b, key_b)):
        if key not in run.scores:
            raise MlnbError(f"{run.folder}: no model {key!r}; it has {', '.join(run.scores)}")
    if run_a.Y_test.shape != run_b.Y_test.shape or (run_a.Y_test != run_b.Y_test).nnz:
        raise MlnbError(f"{run_a.folder} and {run_b.folder} were evaluated on different test documents "
                        "or categories: a paired test needs the same ones")
    if run_a.task != run_b.task:
        raise MlnbError(f"{run_a.folder} is a {run_a.task} run and {run_b.folder} a {run_b.task} one: "
                        "their scores do not compare")
    for run, key in ((run_a, key_a), (run_b, key_b)):  # a SavedRun built in Python, not by load_scores
        try:
            run.scores[key] = score_array(run.scores[key], f"scores_{key}", ndim=2, shape=run.Y_test.shape)
        except MlnbError as error:
            raise MlnbError(f"{run.folder}: model {key!r}: {error}") from None
    label_a, label_b = run_a.labels[key_a], run_b.labels[key_b]
    name_a, name_b = key_a, key_b
    if run_a is not run_b:  # two runs: run-qualified names, 'runA:lr' against 'runB:lr'
        tag_a, tag_b = run_tags(run_a.folder, run_b.folder)
        name_a, name_b = f"{tag_a}:{key_a}", f"{tag_b}:{key_b}"
    scores_a, scores_b, mcnemar = run_a.scores[key_a], run_b.scores[key_b], None
    if run_a.task == "multiclass":  # rank by each class's log-odds; pair the argmax decisions
        truth = run_a.Y_test.indices  # one class per row
        mcnemar = mcnemar_test(scores_a.argmax(axis=1) == truth, scores_b.argmax(axis=1) == truth)
        scores_a, scores_b = class_log_odds(scores_a), class_log_odds(scores_b)
    # what either run left out of its own comparisons (eval.untrainable = 'exclude') stays out here
    excluded = np.union1d(run_a.excluded, run_b.excluded).astype(np.int64)
    n_boot, seed, level = _bootstrap_settings(saved_config(run_a))
    try:
        return compare_scores(run_a.Y_test, scores_a, scores_b, run_a.category_names, run_a.train_positives,
                              label_a, label_b, alpha, name_a, name_b, mcnemar=mcnemar, exclude=excluded,
                              n_boot=n_boot, seed=seed, level=level)
    except ValueError as error:  # what the scores file checks cannot see: named by run and model
        raise MlnbError(f"{run_a.folder} (model {key_a!r}) against {run_b.folder} (model {key_b!r}): "
                        f"{' '.join(str(error).split())}") from None


def run_tags(folder_a: Path, folder_b: Path) -> tuple[str, str]:
    """Short names of two results folders: the last parts of their paths, as few as tell them apart
    ('20261126-083107' and '20261126-091500'; 'a/quickstart/20261126-083107' and 'b/quickstart/...'
    where only the roots differ). The same folder twice: 'A' and 'B' appended."""
    parts_a, parts_b = Path(folder_a).resolve().parts, Path(folder_b).resolve().parts
    if parts_a == parts_b:
        return f"{parts_a[-1]}-A", f"{parts_b[-1]}-B"
    for n in range(1, max(len(parts_a), len(parts_b)) + 1):
        tag_a, tag_b = "/".join(parts_a[-n:]), "/".join(parts_b[-n:])
        if tag_a != tag_b:
            return tag_a.lstrip("/"), tag_b.lstrip("/")
    return str(folder_a), str(folder_b)


def _bootstrap_settings(config: dict | None) -> tuple[int, int, float]:
    """(resamples, seed, level) of the paired bootstrap of the macro AUC difference: the first run's
    eval.bootstrap, seed and eval.confidence, as its own comparisons used (none without a saved config)."""
    if not config:
        return 0, 0, 0.95
    table = config.get("eval") or {}
    try:
        return int(table.get("bootstrap", 0)), int(config.get("seed", 0)), float(table.get("confidence", 0.95))
    except (TypeError, ValueError):
        return 0, 0, 0.95


def saved_config(run: SavedRun) -> dict | None:
    """The run's config.toml as a table, or None when the folder has none that reads (a SavedRun built
    in Python, or a damaged file: pairing then falls back on the model names)."""
    if run.folder is None:
        return None
    try:
        return tomllib.loads((Path(run.folder) / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def _scoring_identity(config: dict, key: str) -> dict:
    """What makes model ``key``'s test scores what they are: its kind, options and seed, and the
    study's data, features, task and evaluation; not its label, the report or other commands. A model
    it starts from (``init_from``) is part of it."""
    models = config.get("models", {})
    spec = {k: v for k, v in models.get(key, {}).items() if k not in NOT_SCORING_MODEL_KEYS}
    if spec.get("random_state", -1) == -1:  # the study's seed, as the fit resolves it
        spec["random_state"] = config.get("seed", 0)
    used = spec.get("init_from")
    identity = {k: v for k, v in config.items() if k not in NOT_SCORING and k != "models"}
    identity["model"] = spec
    if used and used != key and used in models:
        identity["starts_from"] = _scoring_identity(config, used)["model"]
    return identity


def identical_models(run_a: SavedRun, key_a: str, run_b: SavedRun, key_b: str) -> bool:
    """True when the two saved models are the same model on the same data (the same kind, options, seed,
    data, features and evaluation), as their config.toml files say; False when they differ or a config
    is missing."""
    config_a, config_b = saved_config(run_a), saved_config(run_b)
    if config_a is None or config_b is None:
        return run_a is run_b and key_a == key_b
    return _scoring_identity(config_a, key_a) == _scoring_identity(config_b, key_b)


def default_pair(run_a: SavedRun, run_b: SavedRun | None = None) -> tuple[str, str]:
    """The models ``mlnb compare`` pairs when none is named: within one run its second model against
    its first (in the study: the first is the reference); of two runs the first model of run A that
    run B has too, against it. Pairs of identical models are skipped (the next pair in that order),
    and when every pair is identical that is an MlnbError saying so."""
    names_a = list(run_a.scores)
    if run_b is None or run_b is run_a:
        if len(names_a) < 2:
            raise MlnbError(f"{run_a.folder}: one model only ({names_a[0]}); name a second run to compare with")
        candidates = [(a, b) for b in names_a for a in names_a if a != b]
        candidates.sort(key=lambda pair: (names_a.index(pair[1]) + names_a.index(pair[0]), names_a.index(pair[1])))
        other = run_a
    else:
        names_b = list(run_b.scores)
        shared = [name for name in names_a if name in names_b]
        if not shared:  # a pair of two unrelated names would be a guess, not the comparison asked for
            raise MlnbError(f"{run_a.folder} (models {', '.join(names_a)}) and {run_b.folder} (models "
                            f"{', '.join(names_b)}) have no model name in common; name the pair with "
                            f"--model-a {names_a[0]} --model-b {names_b[0]} (a model of each run)")
        candidates = [(name, name) for name in shared] + [(a, b) for a in names_a for b in names_b if a != b]
        other = run_b
    for key_a, key_b in candidates:
        if not identical_models(run_a, key_a, other, key_b):
            return key_a, key_b
    where = str(run_a.folder) + ("" if other is run_a else f" and {other.folder}")
    raise MlnbError(f"{where}: every pair of models is the same model (kind, options, seed, data and features); "
                    "a paired test of a model against itself tells nothing: name the pair with --model-a/--model-b")


def config_diff(run_a: SavedRun, key_a: str, run_b: SavedRun, key_b: str) -> list[tuple[str, object, object]]:
    """(key, value in a, value in b) of every config key where the two compared models' runs differ:
    two runs, their whole configs (``name`` and ``models.*`` of other models left out), the compared
    models' tables side by side under ``model.*``; one run, the two models' tables. Empty when a
    config is missing."""
    config_a, config_b = saved_config(run_a), saved_config(run_b)
    if config_a is None or config_b is None:
        return []
    rows = []
    if run_a is not run_b:
        flat_a = flatten({k: v for k, v in config_a.items() if k not in ("name", "models")})
        flat_b = flatten({k: v for k, v in config_b.items() if k not in ("name", "models")})
        rows += [(key, flat_a.get(key), flat_b.get(key)) for key in sorted(set(flat_a) | set(flat_b))
                 if flat_a.get(key) != flat_b.get(key)]
    model_a = flatten(config_a.get("models", {}).get(key_a, {}))
    model_b = flatten(config_b.get("models", {}).get(key_b, {}))
    rows += [(f"model.{key}", model_a.get(key), model_b.get(key)) for key in sorted(set(model_a) | set(model_b))
             if model_a.get(key) != model_b.get(key)]
    return rows
