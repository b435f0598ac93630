"""Grid (or seeded random) search over any model's keys (models.<name>.*), scored on a validation split.

The validation documents are carved from the *training* part by a seeded hash of
their ids (``mlnb.engine.documents``: the same documents in memory, streamed and on
Dask); the test part is never read. Each setting is a copy of the study config
with the setting's keys overridden (validated like any config), its model
(with the models it starts from) fitted on the rest of the training part and
scored on the validation part by the study's own loop (``mlnb.study.run_models``).
The best setting maximises the chosen metric (minimises it for log loss and
Brier), either a summary metric over all categories or one category's metric
(the RCV1 tutorial asks for the best learning rate and batch size for
category 6).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from mlnb import progress
from mlnb.config import (MULTICLASS_METRICS, PER_CATEGORY_METRICS, SUMMARY_METRICS, StudyConfig, fit_order,
                         parse_override, toml_value, with_overrides)
from mlnb.backends import LocalBackend, open_backend
from mlnb.data.dataset import Dataset
from mlnb.engine.documents import Bucket, InMemoryDocuments
from mlnb.errors import MlnbError
from mlnb.features import FeatureTransform
from mlnb.metrics.evaluation import LOWER_IS_BETTER
from mlnb.study import open_documents, prepare_data, run_on


def parse_params(texts: list[str]) -> dict[str, list]:
    """['models.lr.lrate=0.1,0.3'] -> {'models.lr.lrate': [0.1, 0.3]} (each value read as TOML, else a string)."""
    grid: dict[str, list] = {}
    for text in texts:
        key, sep, values = text.partition("=")
        key = key.strip()
        if not sep or not values.strip():
            raise MlnbError(f"sweep.params {text!r}: expected 'key=v1,v2,...', e.g. 'models.lr.lrate=0.1,0.3,1'")
        parts = key.split(".")
        if parts[0] != "models" or len(parts) < 3:
            raise MlnbError(f"sweep.params {text!r}: only models.<name>.* keys can be swept (data and "
                            "features stay fixed so that settings are compared on the same documents)")
        grid[key] = [parse_override(f"{key}={v.strip()}")[1] for v in values.split(",")]
    if not grid:
        raise MlnbError("sweep.params: nothing to sweep; give e.g. --param models.lr.lrate=0.1,0.3,1")
    return grid


@dataclass
class SweepResult:
    config: StudyConfig
    grid: dict
    model: str
    metric: str
    category: int
    table: pd.DataFrame  # one row per setting: the swept values, the metric, timings
    best: dict  # the best row
    n_fit: int
    n_validation: int


def _settings(grid: dict, samples: int, seed: int) -> list[dict]:
    everything = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
    if samples and samples < len(everything):
        chosen = np.random.default_rng([seed, 3]).choice(len(everything), size=samples, replace=False)
        everything = [everything[i] for i in sorted(chosen)]
    return everything


def validation_bucket(fraction: float, seed: int) -> Bucket:
    """The training documents a sweep validates on: u(seed + 2·2^32, id) < fraction."""
    return Bucket(seed, "sweep", 0.0, float(fraction))


def validation_split(dataset: Dataset, fraction: float, seed: int) -> Dataset:
    """Training rows only: fit on the rows outside the validation bucket, validate on those in it."""
    ids = dataset.ids[dataset.train_index]
    held = validation_bucket(fraction, seed).mask(ids)
    n_validation = int(held.sum())
    if n_validation < 1 or n_validation >= ids.size:
        raise MlnbError(f"sweep.validation_fraction = {fraction} leaves no fitting or no validation documents "
                        f"out of {ids.size} training documents")
    return replace(dataset, train_index=dataset.train_index[~held], test_index=dataset.train_index[held])


def _in_memory_parts(config: StudyConfig, dataset: Dataset) -> tuple[InMemoryDocuments, InMemoryDocuments]:
    """(fit, validation) documents of a dataset read whole; the feature transform learns from the fit part."""
    split = validation_split(dataset, config.sweep.validation_fraction, config.seed)
    features = FeatureTransform(config.features.transform, config.features.min_df, config.features.max_features)
    features.fit(split.X_train)
    ids, names = dataset.ids, list(dataset.category_names)
    return (InMemoryDocuments(features.transform(split.X_train), split.Y_train, ids[split.train_index], names),
            InMemoryDocuments(features.transform(split.X_test), split.Y_test, ids[split.test_index], names))


def run_sweep(config: StudyConfig, params: list[str], dataset: Dataset | None = None) -> SweepResult:
    """Score every setting of the grid on the validation split; ``dataset`` defaults to the config's."""
    s = config.sweep
    grid = parse_params(params)
    swept_models = sorted({key.split(".")[1] for key in grid})
    model = s.model if s.model != "auto" else (swept_models[0] if len(swept_models) == 1 else None)
    if model is None:
        raise MlnbError(f"sweep.model: the grid sweeps keys of several models ({', '.join(swept_models)}); "
                        "say which model's metric decides")
    per_category = s.category >= 0
    summary_metrics = SUMMARY_METRICS + (MULTICLASS_METRICS if config.task == "multiclass" else ())
    if per_category and s.metric not in PER_CATEGORY_METRICS:
        raise MlnbError(f"sweep.metric = {s.metric!r} with sweep.category = {s.category}: a category's metric is one "
                        f"of {', '.join(PER_CATEGORY_METRICS)}")
    if not per_category and s.metric not in summary_metrics:
        raise MlnbError(f"sweep.metric = {s.metric!r} with sweep.category = -1: a summary metric ({config.task}) is "
                        f"one of {', '.join(summary_metrics)}; a per-category metric needs a category >= 0")
    if dataset is not None or not config.data.streaming:
        dataset = dataset if dataset is not None else prepare_data(config)[0]
        fit, validation = _in_memory_parts(config, dataset)
    else:
        config, train, _, _, _ = open_documents(config)
        bucket = validation_bucket(s.validation_fraction, config.seed)
        fit, validation = train.select(bucket.complement()), train.select(bucket)
    if s.category >= fit.n_categories:
        raise MlnbError(f"sweep.category = {s.category} is out of range: the data has {fit.n_categories} categories")
    if per_category and validation.in_memory:
        positives = int(validation.Y[:, s.category].sum())
        if s.metric in ("auc",) and not 0 < positives < validation.n_documents:
            raise MlnbError(f"sweep.category = {s.category} has {positives} positive validation documents "
                            f"of {validation.n_documents}: its AUC is undefined there; choose another category")
    # every setting is built (and so validated) before anything is fitted
    settings = [(setting, with_overrides(config, [f"{k}={toml_value(v)}" for k, v in setting.items()],
                                         origin="sweep.params"))
                for setting in _settings(grid, s.random_samples, config.seed)]
    for _, setting_config in settings:
        _check_keys_matter(grid, setting_config, model)
    rows, n_fit, n_validation = [], None, None
    with open_backend(config.engine) if config.data.streaming else LocalBackend() as backend:
        for setting, setting_config in progress.track(settings, total=len(settings), description="sweep settings"):
            row = {**setting, s.metric: np.nan, "macro_auc": np.nan, "micro_f1": np.nan, "fit_seconds": np.nan,
                   "error": ""}
            try:
                loop = run_on(setting_config, fit, validation, wanted=[model], backend=backend)
            except MlnbError as error:  # e.g. a learning rate that overflows: record it, go on
                rows.append({**row, "error": str(error)})
                continue
            loop.scored.close()
            (run,) = loop.runs
            n_fit, n_validation = loop.n_train, loop.scored.n_documents
            evaluation, seconds = run.evaluation, run.fit_seconds
            value = (evaluation.per_category[s.metric][s.category] if per_category else evaluation.summary[s.metric])
            rows.append({**row, s.metric: float(value), "macro_auc": evaluation.summary["macro_auc"],
                         "micro_f1": evaluation.summary["micro_f1"], "fit_seconds": seconds})
    table = pd.DataFrame(rows)
    if table[s.metric].isna().all():
        raise MlnbError(f"sweep: no setting could be scored ({table['error'].iloc[0] or 'metric undefined'})")
    order = table[s.metric].sort_values(ascending=s.metric in LOWER_IS_BETTER, na_position="last").index
    if n_fit is None and fit.in_memory:
        n_fit, n_validation = fit.n_documents, validation.n_documents
    return SweepResult(config=config, grid=grid, model=model, metric=s.metric, category=s.category,
                       table=table, best=dict(rows[order[0]]), n_fit=int(n_fit or 0),
                       n_validation=int(n_validation or 0))


def _check_keys_matter(grid: dict, config: StudyConfig, model: str) -> None:
    """Refuse a grid key of a disabled model, of a model the deciding one does not use, or one its
    own options make idle: the rows would differ only by noise."""
    enabled = {spec.name: spec for spec in config.study_models()}
    fitted = [spec.name for spec in fit_order(config, [model])] if model in enabled else list(enabled)
    for key in grid:
        name, option = key.split(".")[1], key.split(".")[2]
        if name not in enabled:
            raise MlnbError(f"sweep.params: {key}: model {name!r} is not an enabled model of the study "
                            f"({', '.join(enabled)})")
        if name not in fitted:
            raise MlnbError(f"sweep.params: {key} does nothing to the deciding model {model!r} (sweep.model), "
                            f"which is fitted from {', '.join(fitted)} only")
        if option == "lrate" and getattr(enabled[name].options, "lrate_per_category", None):
            raise MlnbError(f"sweep.params: {key} does nothing while models.{name}.lrate_per_category is set")
