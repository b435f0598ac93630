"""Learning curves: every model trained on growing samples of the training part (Ng & Jordan 2001).

For each training size (log-spaced by default) and each of several seeds, every
model of the study is fitted on a seeded sample of that many training documents
and evaluated on the whole test part, by the study's own loop
(``mlnb.study.run_on``, so every ``eval.*`` key counts, in memory, streamed or on Dask).
The sample of m documents with seed s is the m training documents with the smallest
u(s + 3·2^32, id) (``sample_bucket``): the same documents whatever the engine. The curves show
each metric's mean over the seeds, with the min–max spread, and where the mean
curves of each compared pair (``report.compare``) cross:
Naive Bayes tends to approach its (higher) asymptotic error sooner, logistic
regression to overtake it with more data.

Multilabel, ``eval.ranking_k`` = k > 0: every row also records the model's ranking metrics at k on the
test part, P@j, nDCG@j and PSP@j at the cut-offs j of ``ranking_cutoffs(k)`` (``mlnb.studies.ranking``: the
functions ``mlnb run`` uses; the propensities from the sample's own training counts), with their mean
curves' crossings like the summary metrics'. Multiclass records none, as the run measures none.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from mlnb import progress
from mlnb.config import StudyConfig
from mlnb.errors import MlnbError
from mlnb.models import get_kind
from mlnb.data.hashing import hash_unit
from mlnb.study.documents import PURPOSES, Bucket
from mlnb.studies.ranking import ranking_columns, ranking_of_loop
from mlnb.study import model_labels, open_documents, open_executor, run_on
from mlnb.study.top_k import metrics_kept
from mlnb.work import check_work, curve_work

CURVE_METRICS = ("macro_auc", "micro_f1", "mean_expected_accuracy")
MULTICLASS_CURVE_METRICS = ("macro_auc", "accuracy", "log_loss")


def curve_metrics(config: StudyConfig) -> tuple:
    """The summary metrics a curve records per model, size and seed: those of ``CURVE_METRICS`` (multiclass:
    ``MULTICLASS_CURVE_METRICS``) the study's score store measures (engine.scores = 'top_k': micro F1 only)."""
    metrics = MULTICLASS_CURVE_METRICS if config.task == "multiclass" else CURVE_METRICS
    kept = metrics_kept(config)
    return metrics if kept is None else tuple(metric for metric in metrics if metric in kept)


#: training sizes of a curve without curve.sizes (fewer where rounding makes two equal)
DEFAULT_POINTS = 8


def training_sizes(requested: list[int], n_train: int, points: int = DEFAULT_POINTS) -> list[int]:
    if requested:
        too_big = [s for s in requested if s > n_train]
        if too_big:
            raise MlnbError(f"curve.sizes {too_big} exceed the {n_train} training documents")
        return sorted(set(int(s) for s in requested))
    low = min(100, n_train)
    return sorted(set(np.unique(np.round(np.geomspace(low, n_train, points)).astype(int)).tolist()))


@dataclass
class CurveResult:
    config: StudyConfig
    table: pd.DataFrame  # one row per model × size × seed
    labels: dict  # model name -> label
    crossings: dict  # "a-vs-b" -> {metric -> training sizes where the mean curves of a and b cross}
    metrics: tuple = CURVE_METRICS  # the summary metrics recorded per model × size × seed
    # the ranking metrics at k recorded per model × size × seed (P@j, nDCG@j, PSP@j; ``mlnb.studies.ranking``)
    ranking_metrics: tuple = ()


def crossings(sizes: np.ndarray, a: np.ndarray, b: np.ndarray) -> list[float]:
    """Sizes where mean curve a − b changes sign, interpolated linearly in log(size)."""
    d = np.asarray(a) - np.asarray(b)
    found = []
    for i in range(len(d) - 1):
        if np.isfinite(d[i]) and np.isfinite(d[i + 1]) and d[i] * d[i + 1] < 0:
            t = d[i] / (d[i] - d[i + 1])
            found.append(float(np.exp(np.log(sizes[i]) + t * (np.log(sizes[i + 1]) - np.log(sizes[i])))))
    return found


def scheduled(config: StudyConfig, size: int, n_full: int) -> StudyConfig:
    """The config for a training sample of ``size`` documents.

    With ``curve.schedule = "fixed_updates"``, every model whose kind declares a ``schedule`` (the minibatch
    kinds: options ``batch_size`` and ``npasses``) makes as many updates as its full-size fit would, U = npasses·⌈n/B⌉: the batch
    shrinks to B′ = min(B, max(10, ⌈size/10⌉)) so that even 100 documents give ten minibatches a
    pass, and npasses′ = min(max_passes, ⌈U / ⌈size/B′⌉⌉). The same passes at every size would give
    100 documents 2 updates and 781k documents 1,564: the curve would then measure the schedule,
    not the data (the NB/LR crossing moved by 40% with batch size and passes).
    """
    if config.curve.schedule == "as_config" or size >= n_full:
        return config
    models = {}
    for name, spec in config.models.items():
        schedule = get_kind(spec.kind).schedule  # a minibatch kind's: ``mlnb.models.logistic.options.fixed_updates``
        if schedule is not None:
            spec = replace(spec, options=schedule(spec.options, size, n_full, config.curve.max_passes))
        models[name] = spec
    return replace(config, models=models)


def sample_bucket(u: np.ndarray, size: int, seed: int) -> Bucket:
    """The bucket of the ``size`` training documents with the smallest hash values ``u`` (their
    u(seed + 3·2^32, id), ids unique): [0, the next float after the size-th smallest)."""
    cut = np.partition(u, size - 1)[size - 1] if size < u.size else 1.0
    return Bucket(seed, "sample", 0.0, float(np.nextafter(cut, 2.0)) if size < u.size else 1.0)


def _training_ids(train) -> np.ndarray:
    """The training documents' ids (one pass over them when streamed)."""
    if train.in_memory:
        return train.ids
    ids = [chunk.ids for chunk in train.chunks()]
    return np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)


def run_curve(config: StudyConfig) -> CurveResult:
    check_work(config, curve_work(config, len(set(config.curve.sizes)) or DEFAULT_POINTS), "curve")  # before reading
    config, train, test, _, _ = open_documents(config)
    ids = _training_ids(train)
    sizes = training_sizes(config.curve.sizes, ids.size)
    jobs = [(size, seed) for size in sizes for seed in range(config.curve.seeds)]
    metrics, ranking = curve_metrics(config), ranking_columns(config)
    rows = []
    with open_executor(config) as backend:
        for size, seed in progress.track(jobs, total=len(jobs), description="learning curve"):
            sample_seed = config.data_seed() * 1_000 + seed  # which documents: data.seed (default: seed)
            u = hash_unit(ids, sample_seed + (PURPOSES["sample"] << 32))
            sample = train.select(sample_bucket(u, size, sample_seed))
            sized = scheduled(config, size, ids.size)
            loop = run_on(sized, sample, test, curve_categories=[], seed=config.seed * 1_000 + seed,  # training
                          backend=backend)
            try:  # the rankings read the scores, in memory or spilled, before they are let go
                ranked = ranking_of_loop(sized, loop)
            finally:
                loop.store.close()
            for run in loop.runs:
                spec = sized.models[run.name]
                rows.append({"model": run.name, "size": size, "seed": seed, "fit_seconds": run.fit_seconds,
                             "batch_size": np.nan, "npasses": np.nan, **get_kind(spec.kind).schedule_of(spec.options),
                             **{m: run.evaluation.summary[m] for m in metrics}, **ranked[run.name]})
    table = pd.DataFrame(rows)
    crossed = list(metrics) + list(ranking)
    means = table.groupby(["model", "size"])[crossed].mean()
    found = {}
    for name_a, name_b in config.compared_pairs():
        found[f"{name_a}-vs-{name_b}"] = {
            metric: crossings(np.array(sizes), means.loc[name_a][metric].to_numpy(),
                              means.loc[name_b][metric].to_numpy()) for metric in crossed}
    return CurveResult(config=config, table=table, labels=model_labels(config), crossings=found, metrics=metrics,
                       ranking_metrics=ranking)
