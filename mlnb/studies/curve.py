"""Learning curves: NB and LR trained on growing samples of the training part (Ng & Jordan 2001).

For each training size (log-spaced by default) and each of several seeds, both
models are fitted on a seeded sample of that many training documents and
evaluated on the whole test part. The curves show each metric's mean over the
seeds, with the min–max spread, and where the two models' means cross:
Naive Bayes tends to approach its (higher) asymptotic error sooner, logistic
regression to overtake it with more data.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from mlnb import progress
from mlnb.config import StudyConfig
from mlnb.errors import MlnbError
from mlnb.metrics.evaluation import evaluate
from mlnb.study import build_models, fit_options, prepare_data

CURVE_METRICS = ("macro_auc", "micro_f1", "mean_expected_accuracy")


def training_sizes(requested: list[int], n_train: int, points: int = 8) -> list[int]:
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
    labels: dict  # model key -> label
    crossings: dict  # metric -> list of training sizes where the mean curves cross


def crossings(sizes: np.ndarray, a: np.ndarray, b: np.ndarray) -> list[float]:
    """Sizes where mean curve a − b changes sign, interpolated linearly in log(size)."""
    d = np.asarray(a) - np.asarray(b)
    found = []
    for i in range(len(d) - 1):
        if np.isfinite(d[i]) and np.isfinite(d[i + 1]) and d[i] * d[i + 1] < 0:
            t = d[i] / (d[i] - d[i + 1])
            found.append(float(np.exp(np.log(sizes[i]) + t * (np.log(sizes[i + 1]) - np.log(sizes[i])))))
    return found


def run_curve(config: StudyConfig) -> CurveResult:
    dataset, features = prepare_data(config)
    X_all = features.transform(dataset.X)  # columns fixed by the full training part, rows sliced below
    Y_test = dataset.Y_test
    X_test = X_all[dataset.test_index]
    sizes = training_sizes(config.curve.sizes, dataset.train_index.size)
    models = build_models(config)
    jobs = [(size, seed) for size in sizes for seed in range(config.curve.seeds)]
    rows = []
    for size, seed in progress.track(jobs, total=len(jobs), description="learning curve"):
        sample = dataset.subsample_train(size, seed=config.seed * 1_000 + seed)
        X, Y = X_all[sample.train_index], dataset.Y[sample.train_index]
        seeded = replace(config, seed=config.seed * 1_000 + seed)
        fitted = {}
        for key, (label, model) in build_models(seeded).items():  # NB first: LR may start from it
            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X, Y, **fit_options(seeded, key, fitted.get("nb")))
            fitted[key] = model
            seconds = time.perf_counter() - started
            summary = evaluate(Y_test, model.decision_function(X_test), curve_categories=[]).summary
            rows.append({"model": key, "size": size, "seed": seed, "fit_seconds": seconds,
                         **{m: summary[m] for m in CURVE_METRICS}})
    table = pd.DataFrame(rows)
    found = {}
    if set(table["model"]) >= {"nb", "lr"}:
        means = table.groupby(["model", "size"])[list(CURVE_METRICS)].mean()
        for metric in CURVE_METRICS:
            found[metric] = crossings(np.array(sizes), means.loc["lr"][metric].to_numpy(),
                                      means.loc["nb"][metric].to_numpy())
    return CurveResult(config=config, table=table, labels={k: v[0] for k, v in models.items()}, crossings=found)
