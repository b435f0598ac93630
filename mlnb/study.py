"""One NB-vs-LR study: data source -> features -> models -> scores -> metrics.

``run_study`` computes everything and writes nothing; ``mlnb.report`` turns
its result into a results folder. The CLI only chains the two.
"""

from __future__ import annotations

import difflib
import time
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from mlnb import progress
from mlnb.config import StudyConfig
from mlnb.data.dataset import Dataset
from mlnb.data.sources import load_dataset
from mlnb.errors import MlnbError
from mlnb.features import FeatureTransform
from mlnb.metrics.evaluation import Evaluation, evaluate
from mlnb.models import LogisticRegression, NaiveBayes, SklearnLogisticRegression
from mlnb.studies.compare import Comparison, compare_scores

MODEL_COLORS = {"nb": "tab:red", "lr": "tab:blue"}  # the classic plot: NB red, LR blue


@dataclass
class ModelResult:
    key: str  # "nb" or "lr"
    label: str  # for tables and legends
    model: object
    fit_seconds: float
    score_seconds: float
    eval_seconds: float
    evaluation: Evaluation
    scores: np.ndarray  # (n_test, K) log-odds on the test part

    @property
    def color(self) -> str:
        return MODEL_COLORS.get(self.key, "black")


@dataclass
class StudyResult:
    config: StudyConfig
    data: dict  # Dataset.describe() plus the feature space after transforms
    category_names: list
    train_positives: np.ndarray  # (K,) training documents per category
    models: list[ModelResult] = field(default_factory=list)
    load_seconds: float = 0.0
    Y_test: object = None  # (n_test, K) sparse 0/1
    comparison: Comparison | None = None  # models[1] (LR) against models[0] (NB), per category


def build_models(config: StudyConfig) -> dict[str, tuple[str, object]]:
    """key -> (label, unfitted estimator) for the enabled models."""
    models = {}
    if config.nb.enabled:
        nb = config.nb
        label = f"Naive Bayes ({nb.event_model}{', binarized' if nb.binarize else ''})"
        models["nb"] = (label, NaiveBayes(event_model=nb.event_model, smoothing=nb.smoothing,
                                          alpha=nb.alpha, m=nb.m, binarize=nb.binarize, mode=nb.mode))
    if config.lr.enabled:
        lr = config.lr
        if lr.engine == "sklearn":
            sk = lr.sklearn
            models["lr"] = ("Logistic regression (sklearn SGD, one category at a time)",
                            SklearnLogisticRegression(learning_rate=sk.learning_rate, eta0=sk.eta0,
                                                      alpha=sk.alpha, penalty=sk.penalty,
                                                      l1_ratio=sk.l1_ratio, npasses=lr.npasses,
                                                      average=sk.average, random_state=config.seed,
                                                      n_jobs=sk.n_jobs))
        else:
            models["lr"] = (f"Logistic regression ({lr.updater}, all categories)",
                            LogisticRegression(updater=lr.updater,
                                               lrate=lr.lrate_per_category or lr.lrate,
                                               batch_size=lr.batch_size, npasses=lr.npasses, l1=lr.l1,
                                               l2=lr.l2, texp=lr.texp, vexp=lr.vexp, epsilon=lr.epsilon,
                                               shuffle=lr.shuffle, random_state=config.seed,
                                               kernel=lr.kernel))
    if not models:
        raise MlnbError("nb.enabled and lr.enabled are both false: nothing to study")
    return models


def fit_options(config: StudyConfig, key: str, fitted_nb=None, eval_set=None) -> dict:
    """Extra fit arguments of model ``key``: the LR engine's warm start from this run's
    Naive Bayes (``fitted_nb``) and, with lr.monitor, per-pass held-out loss on ``eval_set``."""
    if key != "lr" or config.lr.engine != "mlnb":
        return {}
    options = {}
    if config.lr.init == "nb":
        if fitted_nb is None:
            raise MlnbError("lr.init = 'nb' needs Naive Bayes in the same run (nb.enabled = true)")
        options.update(coef_init=fitted_nb.weights_, intercept_init=fitted_nb.bias_)
    if config.lr.monitor and eval_set is not None:
        options["eval_set"] = eval_set
    return options


def prepare_data(config: StudyConfig) -> tuple[Dataset, FeatureTransform]:
    with progress.status("loading data"):
        dataset = load_dataset(config.data, config.seed, config.features)
    if config.report.category_name:
        names = list(dataset.category_names)
        if config.report.category_name not in names:
            close = difflib.get_close_matches(config.report.category_name, names, n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise MlnbError(f"report.category_name = {config.report.category_name!r} is not a category of "
                            f"the data{hint}")
    elif not 0 <= config.report.category < dataset.n_categories:
        raise MlnbError(f"report.category = {config.report.category} is out of range: the data has "
                        f"{dataset.n_categories} categories (0..{dataset.n_categories - 1})")
    per_category = config.lr.lrate_per_category
    if per_category and len(per_category) != dataset.n_categories:
        raise MlnbError(f"lr.lrate_per_category has {len(per_category)} values but the data has "
                        f"{dataset.n_categories} categories")
    features = FeatureTransform(config.features.transform, config.features.min_df,
                                config.features.max_features)
    features.fit(dataset.X_train)
    return dataset, features


def run_study(config: StudyConfig) -> StudyResult:
    """Fit every enabled model on the training part and evaluate it on the test part."""
    started = time.perf_counter()
    models = build_models(config)
    dataset, features = prepare_data(config)
    if config.report.category_name:  # the name decides; the resolved config records the index too
        index = list(dataset.category_names).index(config.report.category_name)
        config = replace(config, report=replace(config.report, category=index))
    X_train, X_test = features.transform(dataset.X_train), features.transform(dataset.X_test)
    Y_train, Y_test = dataset.Y_train, dataset.Y_test
    info = dataset.describe() | {"n_features_used": int(X_train.shape[1]),
                                 "feature_transform": config.features.transform}
    result = StudyResult(config=config, data=info, category_names=dataset.category_names,
                         train_positives=np.asarray(Y_train.sum(axis=0)).ravel(),
                         load_seconds=time.perf_counter() - started)
    for key, (label, model) in models.items():
        t0 = time.perf_counter()
        with progress.status(f"fitting {label}"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # untrainable categories are reported, not warned
            nb = next((run.model for run in result.models if run.key == "nb"), None)
            model.fit(X_train, Y_train, **fit_options(config, key, nb, (X_test, Y_test)))
        t1 = time.perf_counter()
        scores = model.decision_function(X_test)  # (n_test, K) log-odds
        t2 = time.perf_counter()
        evaluation = evaluate(Y_test, scores, dataset.category_names, config.eval.threshold,
                              config.eval.roc_points, curve_categories=[config.report.category])
        t3 = time.perf_counter()
        result.models.append(ModelResult(key=key, label=label, model=model, fit_seconds=t1 - t0,
                                         score_seconds=t2 - t1, eval_seconds=t3 - t2,
                                         evaluation=evaluation, scores=scores))
    result.Y_test = Y_test
    if config.report.compare and len(result.models) == 2:
        nb_run, lr_run = result.models
        with progress.status("DeLong tests per category"):
            result.comparison = compare_scores(Y_test, lr_run.scores, nb_run.scores, dataset.category_names,
                                               result.train_positives, lr_run.label, nb_run.label,
                                               config.report.alpha)
    return result
