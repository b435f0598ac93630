"""Grid (or seeded random) search over any model's keys (models.<name>.*): select on repeated
validation splits of the training part, then refit the chosen setting and test it once.

The validation documents are carved from the *training* part by a seeded hash of
their ids (``mlnb.study.documents``: the same documents in memory, streamed and on
Dask). Repeat r = 0..R−1 (``sweep.repeats``) holds out

    validation part r:   u(seed_r + 2·2^32, id) < validation_fraction,   seed_r = (seed + r) mod 2^32

(seed: the data seed, ``data.seed`` or else ``seed``; repeat 0 is the single split of earlier
versions). Each setting is a copy of the study config
with the setting's keys overridden (validated like any config), its model (with the models it
starts from) fitted on the rest of the training part and scored on the validation part by the
study's own loop (``mlnb.study.run_on``). The chosen metric (a summary metric over all
categories, or one category's metric: the RCV1 tutorial asks for the best learning rate and batch
size for category 6) is summarised per setting by its mean m over the R repeats, its standard
deviation sd and its standard error se = sd / √R. The selection rule (``sweep.rule``):

    best                the setting with the best m
    one_standard_error  the first setting, in grid order, whose m is within se* of the best m
                        (se* the best setting's se): no worse than the best by more than its own
                        noise; list the simpler (more regularised) values first

(higher is better; log loss and Brier are minimised). The repeats share most of their training
documents, so se understates the spread a new training set would give: it is a lower bound.

The test part is read once, after the choice (``sweep.test``): the chosen setting's config
(written as ``best.toml``) is refitted on the whole training part and evaluated on the test part
by the same loop, as ``mlnb run best.toml`` would evaluate it.

Multilabel, ``eval.ranking_k`` = k > 0: every row also records the ranking metrics at k of the deciding
model, P@j, nDCG@j and PSP@j at the cut-offs j of ``ranking_cutoffs(k)`` (``mlnb.studies.ranking``: the
functions ``mlnb run`` uses, on the point's own validation documents and training counts), averaged over
the repeats like the other recorded metrics; the test of the chosen setting records them on the test part,
equal to those of ``mlnb run best.toml``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from mlnb import progress
from mlnb.config import (MULTICLASS_METRICS, PER_CATEGORY_METRICS, SUMMARY_METRICS, StudyConfig, fit_order,
                         parse_override, toml_value, with_overrides)
from mlnb.backends import LocalBackend, open_backend
from mlnb.data.dataset import Dataset
from mlnb.study.documents import Bucket, InMemoryDocuments
from mlnb.errors import MlnbError
from mlnb.features import FeatureTransform
from mlnb.metrics.evaluation import LOWER_IS_BETTER
from mlnb.models import get_kind
from mlnb.studies.ranking import ranking_columns, ranking_of_loop
from mlnb.study import in_memory_documents, open_documents, prepare_data, run_on
from mlnb.study.top_k import metrics_kept
from mlnb.work import check_work, sweep_work


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
    table: pd.DataFrame  # one row per setting (grid order): the swept values, the metric's mean, sd, se, timings
    best: dict  # the chosen row (sweep.rule)
    n_fit: int  # documents the models were fitted on (repeat 0)
    n_validation: int  # documents validated on (repeat 0)
    repeats: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per setting × repeat
    rule: str = "best"
    best_mean: dict = field(default_factory=dict)  # the row with the best mean (the same as best under 'best')
    best_config: StudyConfig | None = None  # the chosen setting's config: best.toml
    test: dict = field(default_factory=dict)  # the chosen setting refitted and tested once (sweep.test)
    # the ranking metrics at k every row records (P@j, nDCG@j, PSP@j; ``mlnb.studies.ranking``), () if none
    ranking_metrics: tuple = ()


def _settings(grid: dict, samples: int, seed: int) -> list[dict]:
    everything = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
    if samples and samples < len(everything):
        chosen = np.random.default_rng([seed, 3]).choice(len(everything), size=samples, replace=False)
        everything = [everything[i] for i in sorted(chosen)]
    return everything


def repeat_seed(seed: int, repeat: int) -> int:
    """seed_r of validation repeat r: (seed + r) mod 2^32, within the seeds of purpose 'sweep'."""
    return (int(seed) + int(repeat)) % (1 << 32)


def validation_bucket(fraction: float, seed: int, repeat: int = 0) -> Bucket:
    """The training documents repeat r validates on: u(seed_r + 2·2^32, id) < fraction."""
    return Bucket(repeat_seed(seed, repeat), "sweep", 0.0, float(fraction))


def validation_split(dataset: Dataset, fraction: float, seed: int, repeat: int = 0) -> Dataset:
    """Training rows only: fit on the rows outside the validation bucket, validate on those in it."""
    ids = dataset.ids[dataset.train_index]
    held = validation_bucket(fraction, seed, repeat).mask(ids)
    n_validation = int(held.sum())
    if n_validation < 1 or n_validation >= ids.size:
        raise MlnbError(f"sweep.validation_fraction = {fraction} leaves no fitting or no validation documents "
                        f"out of {ids.size} training documents")
    return replace(dataset, train_index=dataset.train_index[~held], test_index=dataset.train_index[held])


def _in_memory_parts(config: StudyConfig, dataset: Dataset, repeat: int = 0
                     ) -> tuple[InMemoryDocuments, InMemoryDocuments]:
    """(fit, validation) documents of a dataset read whole; the feature transform learns from the fit part."""
    split = validation_split(dataset, config.sweep.validation_fraction, config.data_seed(), repeat)
    features = FeatureTransform(config.features.transform, config.features.min_df, config.features.max_features)
    features.fit(split.X_train)
    ids, names = dataset.ids, list(dataset.category_names)
    return (InMemoryDocuments(features.transform(split.X_train), split.Y_train, ids[split.train_index], names),
            InMemoryDocuments(features.transform(split.X_test), split.Y_test, ids[split.test_index], names))


def _summary_metrics(config: StudyConfig) -> tuple[str, ...]:
    """What every row records besides the deciding metric."""
    return ("macro_auc", "accuracy", "log_loss") if config.task == "multiclass" else ("macro_auc", "micro_f1")


def choose(table: pd.DataFrame, metric: str, rule: str) -> tuple[int, int]:
    """(chosen row, row with the best mean) of a sweep table in grid order: ``sweep.rule`` above."""
    lower = metric in LOWER_IS_BETTER
    means = table[metric].to_numpy(dtype=float)
    scored = np.flatnonzero(np.isfinite(means))
    best = int(scored[np.argmin(means[scored]) if lower else np.argmax(means[scored])])
    if rule == "best":
        return best, best
    se = table[f"{metric}_se"].to_numpy(dtype=float)[best]
    se = 0.0 if not np.isfinite(se) else se
    within = means[scored] <= means[best] + se if lower else means[scored] >= means[best] - se
    return int(scored[np.flatnonzero(within)[0]]), best


def _value(evaluation, metric: str, category: int) -> float:
    return float(evaluation.per_category[metric][category] if category >= 0 else evaluation.summary[metric])


def run_sweep(config: StudyConfig, params: list[str], dataset: Dataset | None = None) -> SweepResult:
    """Score every setting of the grid on every validation repeat, choose one (``sweep.rule``), and
    (``sweep.test``) refit it on the whole training part and test it; ``dataset`` defaults to the config's."""
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
    kept = metrics_kept(config, per_category)
    if kept is not None and s.metric not in kept:
        raise MlnbError(f"sweep.metric = {s.metric!r}: engine.scores = 'top_k' keeps each validation document's "
                        f"eval.ranking_k best categories only, which do not measure it; use one of {', '.join(kept)}")
    n_settings = math.prod(len(values) for values in grid.values())
    n_settings = min(n_settings, s.random_samples) if s.random_samples else n_settings
    check_work(config, sweep_work(config, n_settings, model), "sweep")  # the fits, before any data is read
    streamed = dataset is None and config.data.streaming
    if not streamed:
        dataset = dataset if dataset is not None else prepare_data(config)[0]
        parts = [_in_memory_parts(config, dataset, r) for r in range(s.repeats)]
    else:
        config, train, test, _, _ = open_documents(config)
        buckets = [validation_bucket(s.validation_fraction, config.data_seed(), r) for r in range(s.repeats)]
        parts = [(train.select(bucket.complement()), train.select(bucket)) for bucket in buckets]
    n_categories = parts[0][0].n_categories
    if s.category >= n_categories:
        raise MlnbError(f"sweep.category = {s.category} is out of range: the data has {n_categories} categories")
    for r, (_, validation) in enumerate(parts):
        if per_category and validation.in_memory and s.metric == "auc":
            positives = int(validation.Y[:, s.category].sum())
            if not 0 < positives < validation.n_documents:
                raise MlnbError(f"sweep.category = {s.category} has {positives} positive validation documents "
                                f"of {validation.n_documents} in repeat {r}: its AUC is undefined there; choose "
                                "another category (or fewer sweep.repeats, a larger sweep.validation_fraction)")
    # every setting is built (and so validated) before anything is fitted
    settings = [(setting, with_overrides(config, [f"{k}={toml_value(v)}" for k, v in setting.items()],
                                         origin="sweep.params"))
                for setting in _settings(grid, s.random_samples, config.seed)]
    for _, setting_config in settings:
        _check_keys_matter(grid, setting_config, model)
    check_work(config, sweep_work(config, len(settings), model, [c for _, c in settings]), "sweep")  # and passes
    summarised, ranking = _summary_metrics(config), ranking_columns(config)
    recorded = summarised + ranking
    long_rows, n_fit, n_validation = [], None, None
    jobs = [(i, r) for i in range(len(settings)) for r in range(s.repeats)]
    with open_backend(config.engine) if streamed else LocalBackend() as backend:
        for i, r in progress.track(jobs, total=len(jobs), description="sweep settings × repeats"):
            setting, setting_config = settings[i]
            fit, validation = parts[r]
            row = {"setting": i, "repeat": r, **setting, s.metric: np.nan, **{m: np.nan for m in recorded},
                   "fit_seconds": np.nan, "error": ""}
            try:
                loop = run_on(setting_config, fit, validation, wanted=[model], backend=backend)
            except MlnbError as error:  # e.g. a learning rate that overflows: record it, go on
                long_rows.append({**row, "error": str(error)})
                continue
            try:  # the rankings read the scores, in memory or spilled, before they are let go
                ranked = ranking_of_loop(setting_config, loop)[model]
            finally:
                loop.store.close()
            (run,) = loop.runs
            if r == 0:
                n_fit, n_validation = loop.n_train, loop.store.n_documents
            evaluation = run.evaluation
            long_rows.append({**row, **{m: float(evaluation.summary.get(m, np.nan)) for m in summarised},
                              **ranked, s.metric: _value(evaluation, s.metric, s.category),
                              "fit_seconds": run.fit_seconds})
    repeats = pd.DataFrame(long_rows)
    if repeats[s.metric].isna().all():
        raise MlnbError(f"sweep: no setting could be scored ({repeats['error'].iloc[0] or 'metric undefined'})")
    table = _per_setting(repeats, settings, s.metric, recorded)
    if table[s.metric].isna().all():  # each setting failed (or was undefined) on at least one repeat
        raise MlnbError(f"sweep: no setting could be scored on all {s.repeats} repeats "
                        f"({table['error'].iloc[0] or 'metric undefined'})")
    chosen, best_mean = choose(table, s.metric, s.rule)
    if n_fit is None and parts[0][0].in_memory:
        n_fit, n_validation = parts[0][0].n_documents, parts[0][1].n_documents
    best_config = settings[chosen][1]
    result = SweepResult(config=config, grid=grid, model=model, metric=s.metric, category=s.category, table=table,
                         best=dict(table.iloc[chosen]), n_fit=int(n_fit or 0), n_validation=int(n_validation or 0),
                         repeats=repeats, rule=s.rule, best_mean=dict(table.iloc[best_mean]), best_config=best_config,
                         ranking_metrics=ranking)
    if s.test:
        result.test = refit_and_test(best_config, model, s.metric, s.category, dataset if not streamed else None,
                                     summarised)
    return result


def _per_setting(repeats: pd.DataFrame, settings: list, metric: str, recorded: tuple) -> pd.DataFrame:
    """One row per setting, grid order: the metric's mean, sd (ddof 1) and se = sd/√R over its scored
    repeats, the means of the other recorded metrics, and the first error met."""
    rows = []
    for i, (setting, _) in enumerate(settings):
        part = repeats[repeats["setting"] == i]
        values = part[metric].to_numpy(dtype=float)
        ok = values[np.isfinite(values)]
        failed = part.loc[part["error"] != "", "error"]
        complete = ok.size == len(part)  # a setting that fails on one repeat is not compared on the others
        sd = float(np.std(ok, ddof=1)) if ok.size > 1 else (0.0 if ok.size == 1 else np.nan)
        row = {**setting, metric: float(ok.mean()) if complete and ok.size else np.nan,
               f"{metric}_sd": sd if complete else np.nan,
               f"{metric}_se": sd / np.sqrt(ok.size) if complete and ok.size else np.nan,
               f"{metric}_min": float(ok.min()) if ok.size else np.nan,
               f"{metric}_max": float(ok.max()) if ok.size else np.nan, "repeats": int(ok.size)}
        for m in recorded:
            if m != metric:
                row[m] = float(part[m].mean()) if complete else np.nan
        row["fit_seconds"] = float(part["fit_seconds"].mean())
        row["error"] = failed.iloc[0] if len(failed) else ""
        rows.append(row)
    return pd.DataFrame(rows)


def refit_and_test(config: StudyConfig, model: str, metric: str, category: int, dataset: Dataset | None,
                   recorded: tuple) -> dict:
    """The chosen setting refitted on the whole training part, evaluated once on the test part: the deciding
    metric, the ``recorded`` summary metrics and (multilabel) the ranking metrics at k of ``ranking_columns``."""
    if dataset is not None:
        features = FeatureTransform(config.features.transform, config.features.min_df, config.features.max_features)
        features.fit(dataset.X_train)
        train, test = in_memory_documents(config, dataset, features)
        backend = LocalBackend()
    else:
        config, train, test, _, _ = open_documents(config)
        backend = None
    with (open_backend(config.engine) if backend is None else backend) as backend:
        loop = run_on(config, train, test, wanted=[model], backend=backend)
        try:
            ranked = ranking_of_loop(config, loop)[model]
        finally:
            loop.store.close()
    (run,) = loop.runs
    evaluation = run.evaluation
    return {"metric": metric, "value": _value(evaluation, metric, category),
            **{m: float(evaluation.summary.get(m, np.nan)) for m in recorded}, **ranked,
            "n_train": int(loop.n_train), "n_test": int(loop.store.n_documents), "fit_seconds": run.fit_seconds}


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
        idle = get_kind(enabled[name].kind).idle_options(enabled[name].options)
        if option in idle:
            raise MlnbError(f"sweep.params: {key} does nothing while models.{name}.{idle[option]}")
