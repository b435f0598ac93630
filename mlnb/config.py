"""Study configuration: defaults in one place, TOML files override them.

Every option is a dataclass field with its default and a one-line ``help``.
``load_config`` reads a TOML file (``tomllib``), applies ``--set key=value``
overrides, and validates everything against these dataclasses: an unknown
key is rejected with the nearest valid key suggested, and a wrong type or
value names the key, the file and what is allowed. The resolved config is
written back with every run (``dump_toml``) and loads again unchanged.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import math
import re
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

from mlnb.data.registry import MAX_DOCUMENTS, MAX_FEATURES
from mlnb.data.regular import open_regular
from mlnb.data.sources import SOURCES, streaming_sources
from mlnb.errors import MlnbError
from mlnb.models import KINDS, get_kind, logistic, naive_bayes, sklearn_logistic
from mlnb.options import option, section
from mlnb.tracking import check_tracking

_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")

# Upper bounds of the keys that size an allocation (MAX_DOCUMENTS, MAX_FEATURES and MAX_CATEGORIES: with the
# data sources' options, in mlnb.data.registry), far below what would end in a MemoryError before a word of
# output. What a run needs within them is estimated by mlnb.budget before any data is read.
MAX_ROC_POINTS = 100_000
# a config is a few kilobytes; a larger file is not one (and is not read whole to find out)
MAX_CONFIG_BYTES = 16 * 2**20
# eval.confidence's least level: 0.5 + level/2 > 0.5 in float64 from level > 2^-53 ≈ 1.1e-16 on
MIN_CONFIDENCE = 1e-15
# Lengths of the text a config names things with: a study's name names the results folder (with '-sweep', and
# within the 255 bytes of a file name), a model's name names files and columns (pairs of them: plot files), a
# label is one line of the report; any other string (a path, an address) is at most PATH_MAX.
MAX_NAME_LENGTH = 100
MAX_MODEL_NAME_LENGTH = 64
MAX_LABEL_LENGTH = 200
MAX_STRING_LENGTH = 4096
# Dask scheduler addresses: [protocol://]host:port (host a name, IPv4 or [IPv6])
_DASK_ADDRESS = re.compile(r"(?:(?:tcp|tls|ucx|ws|wss)://)?(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})")


def shown(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for a one-line message, cut to about ``limit`` characters (a config value can be
    megabytes long, and the message names it)."""
    try:
        text = repr(value)
    except ValueError:  # an integer of more than 4,300 digits
        return f"an integer of ~{value.bit_length() * 0.30103:,.0f} digits"
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


#: sources that can be read chunk by chunk (data.streaming = true): those of the registry (mlnb.data.sources)
#: that can open streams
STREAMING_SOURCES = streaming_sources()


@dataclass
class _DataKeys:
    """The keys of [data] that every source shares; each source adds its own table, [data.<name>]."""

    source: str = option("synthetic", "where documents come from", choices=tuple(SOURCES))
    streaming: bool = option(False, "read the data chunk by chunk instead of whole (sources "
                             f"{', '.join(STREAMING_SOURCES)}): memory independent of the corpus size; the same "
                             "documents and split as read whole")
    chunk_size: int = option(10_000, "streaming: documents per chunk read", min=1, max=10_000_000)
    shuffle_buffer: int = option(8, "streaming: logistic regression shuffles documents within this many chunks "
                                 "(1 = within each chunk)", min=1, max=10_000)
    test_fraction: float = option(0.5, "share of documents held out for testing where a source has no given test "
                                  "part (a seeded hash of each document's id)",
                                  min=0, max=1, exclusive_min=True, exclusive_max=True)
    max_train_documents: int = option(0, "train on a seeded sample of this many documents; 0 = all", min=0)
    seed: int = option(-1, "seed of what picks documents: synthetic data, the train/test split, max_train_documents, "
                       "the validation split or folds (eval.validation, sweep), curve samples; -1 = the study's seed",
                       min=-1, max=2**32 - 1)


#: [data]: the shared keys, then one table per registered source, in registration order
DataConfig = dataclasses.make_dataclass(
    "DataConfig", [(name, kind.options, section(kind.options)) for name, kind in SOURCES.items()],
    bases=(_DataKeys,), namespace={"__module__": __name__, "__doc__": "[data]: the keys every source shares, "
                                   "then [data.<name>] for each registered source (mlnb.data.sources)"})


@dataclass
class FeaturesConfig:
    transform: str = option("none", "feature values given to both models",
                            choices=("none", "binary", "log_tfidf"))
    min_df: int = option(0, "keep only words in at least this many training documents; 0 = keep all",
                         min=0)
    max_features: int = option(0, "keep at most this many words, by training document frequency; 0 = all",
                               min=0)
    vectorizer: str = option("count", "text sources: CountVectorizer vocabulary or HashingVectorizer",
                             choices=("count", "hashing"))
    lowercase: bool = option(True, "text sources: lowercase before tokenising")
    stop_words: str = option("none", "text sources: drop scikit-learn's English stop words",
                             choices=("none", "english"))
    hash_features: int = option(2**18, "text sources: number of hashed features (vectorizer = 'hashing')",
                                min=1, max=MAX_FEATURES)
    ngram_range: list[int] = option([1, 1], "text sources: [min_n, max_n], the terms are the word n-grams for n "
                                    "from min_n to max_n (1 <= min_n <= max_n <= 5; [1, 1] = words, [1, 2] adds "
                                    "pairs of adjacent words)", min=1, max=5)
    max_vocabulary_memory: int = option(1024, "text sources: MiB the counts of the training texts' terms may take "
                                        "in memory; beyond it they are counted out of core (DuckDB, in the "
                                        "temporary folder) and min_df / max_features apply in that pass",
                                        min=1, max=2**30)


DECISION_RULES = ("fixed", "scut", "scutfbr", "pcut", "rcut")
#: eval.decision's default: the rule chosen by experiments/bench_peers.py for the study's task (``auto_decision``)
AUTO_DECISION = "auto"


def auto_decision(task: str) -> str:
    """The rule ``eval.decision = "auto"`` stands for: 'pcut' for a multilabel study, held in memory, streamed,
    on Dask, its test scores in memory or spilled to disk (PCut decides each category from its column of
    scores: the same decisions everywhere); it needs no training document held out, and it beat the probability
    cut 0.5 on LR's micro and macro F1 on 6 of the 7 multilabel corpora beside the project
    (docs/guide/decisions.md). 'fixed' for multiclass, which decides by the most probable class."""
    return "pcut" if task == "multilabel" else "fixed"


@dataclass
class EvalConfig:
    threshold: float = option(0.5, "probability cut for accuracy, precision, recall, F1",
                              min=0, max=1, exclusive_min=True, exclusive_max=True)
    roc_points: int = option(101, "points of the FPR grid (x from 0 to 1) for ROC and lift", min=2,
                             max=MAX_ROC_POINTS)
    top_k: int = option(2, "k of precision@k (multilabel: true categories among the k best-scored, per "
                        "document) and of top-k accuracy (multiclass)", min=1)
    ranking_k: int = option(5, "multilabel: k of the ranking metrics over each test document's k best categories "
                            "(P@k, R@k, nDCG@k, PSP@k, PSnDCG@k, coverage@k at k = 1, 3 and this k, those up to "
                            "it); 0 = none. Not eval.top_k, which keeps its k of the summary's precision_at_k",
                            min=0, max=1000)
    propensity_a: float = option(0.55, "A of the propensities p_l = 1 / (1 + C (N_l + B)^-A) behind PSP@k and "
                                 "PSnDCG@k (Jain, Prabhu & Varma 2016; 0.55 for most corpora, 0.6 Amazon-like, "
                                 "0.5 Wikipedia-like)", min=0, exclusive_min=True, max=10)
    propensity_b: float = option(1.5, "B of those propensities (1.5 for most corpora, 2.6 Amazon-like, 0.4 "
                                 "Wikipedia-like)", min=0, exclusive_min=True, max=100)
    decision: str = option(AUTO_DECISION, "multilabel decision rule: 'auto' ('pcut' for a multilabel study, "
                           "in memory, streamed or on Dask; multiclass: the most probable class), 'fixed' (probability cut eval.threshold), 'scut' "
                           "(per-category threshold maximising eval.decision_metric on the validation part), "
                           "'scutfbr' (SCut with a fallback rank for categories whose best validation F1 is "
                           "below eval.fbr), 'pcut' (each category's training prevalence of the decided "
                           "documents), 'rcut' (the eval.rcut_k best categories per document)",
                           choices=(AUTO_DECISION,) + DECISION_RULES)
    decision_metric: str = option("f1", "what scut and scutfbr maximise per category", choices=("f1", "accuracy"))
    fbr: float = option(0.1, "scutfbr: a best validation F1 below this falls back to the rank threshold",
                        min=0, max=1)
    fbr_rank: int = option(1, "scutfbr: the fallback threshold is the score of the validation document at "
                           "this rank (1 = the top one)", min=1)
    rcut_k: int = option(1, "rcut: categories decided per document", min=1)
    calibration: str = option("none", "per-category calibration of the scores fitted on the validation part: "
                              "'platt' (affine in the log-odds) or 'isotonic'; rank metrics always use the "
                              "uncalibrated scores", choices=("none", "platt", "isotonic"))
    validation: str = option("split", "where scut, scutfbr and calibration learn: a seeded 'split' of the "
                             "training part, or out-of-fold scores of 'kfold' cross-validation on it; never "
                             "the test part", choices=("split", "kfold"))
    validation_fraction: float = option(0.2, "split: share of the training part held out", min=0, max=1,
                                        exclusive_min=True, exclusive_max=True)
    folds: int = option(5, "kfold: number of folds", min=2, max=1000)
    refit: bool = option(False, "split: after the decision rule or calibration learned on the validation split, "
                         "keep the model fitted without the validation documents, whose scores the thresholds "
                         "fit (false), or refit it on the whole training part (true; a minibatch model's score "
                         "scale grows with its training set, so its thresholds then fit less well); kfold "
                         "always refits")
    untrainable: str = option("exclude", "categories without a training positive (or negative): 'exclude' "
                              "them from macro averages, micro pools and comparisons; 'prior': every model "
                              "scores them by the training prior; 'keep' them in every average: one-vs-rest, "
                              "as 'prior' (every kind alike, none can learn them); multiclass, as the models "
                              "scored them",
                              choices=("exclude", "prior", "keep"))
    bootstrap: int = option(200, "bootstrap resamples of the test documents for the confidence intervals "
                            "of the summary metrics; 0 = none", min=0, max=100_000)
    confidence: float = option(0.95, "level of the confidence intervals (bootstrap, DeLong), from 1e-15 and below 1: "
                               "for a smaller level the quantile 0.5 + level/2 rounds to 0.5 in float64, where the "
                               "t/normal widening of a few positives' interval is 0/0", min=MIN_CONFIDENCE, max=1,
                               exclusive_max=True)


@dataclass
class ReportConfig:
    category: int = option(-1, "category shown in the ROC and lift plots (index); -1 = the most frequent category "
                           "that can be tested (training and test positives and negatives)", min=-1)
    category_name: str = option("", "the same by name (e.g. 'earn'); overrides category when given")
    plots: bool = option(True, "draw the PNG plots")
    top_differences: int = option(10, "categories listed where the compared models differ most", min=0)
    compare: list[list[str]] = option([], "pairs [a, b] of model names compared per category, a − b (DeLong, "
                                      "Holm, sign test, AUC plots); empty = every model against the first")
    paired_tests: bool = option(True, "run the paired comparisons of `compare` at all")
    alpha: float = option(0.05, "significance level of the comparison (after Holm)", min=0, max=1,
                          exclusive_min=True, exclusive_max=True)
    save_scores: bool = option(True, "save test scores (scores.npz) so that `mlnb compare` can pair runs")


PER_CATEGORY_METRICS = ("auc", "expected_accuracy", "accuracy", "f1", "log_loss", "brier")
SUMMARY_METRICS = ("macro_auc", "micro_auc", "macro_f1", "micro_f1", "mean_expected_accuracy",
                   "mean_accuracy", "mean_log_loss", "mean_brier", "precision_at_k")
MULTICLASS_METRICS = ("accuracy", "balanced_accuracy", "weighted_f1", "log_loss", "top_k_accuracy")
TASKS = ("multilabel", "multiclass")


@dataclass
class SweepConfig:
    params: list[str] = option([], "grid: 'key=v1,v2,...' per swept models.<name>.* key, e.g. "
                               "'models.lr.lrate=0.1,0.3,1'")
    metric: str = option("macro_auc", "what picks the best setting: a summary metric, or with category >= 0 a "
                         "per-category one", choices=SUMMARY_METRICS + MULTICLASS_METRICS + PER_CATEGORY_METRICS)
    category: int = option(-1, "category whose metric decides; -1 = the summary metric over all", min=-1)
    model: str = option("auto", "name of the model whose metric decides; auto = the model of the swept keys")
    validation_fraction: float = option(0.2, "share of the training part held out to score settings "
                                        "(the selection never reads the test part)", min=0, max=1, exclusive_min=True,
                                        exclusive_max=True)
    random_samples: int = option(0, "try this many seeded random settings of the grid; 0 = all", min=0,
                                 max=100_000)
    repeats: int = option(5, "validation splits per setting: repeat r holds out the training documents whose seeded "
                          "hash (purpose 'sweep', seed + r) falls below validation_fraction; the metric's mean and "
                          "standard error over the repeats rank the settings", min=1, max=100)
    rule: str = option("best", "which setting is best: 'best' (the best mean over the repeats) or "
                       "'one_standard_error' (the first setting of the grid order whose mean is within one standard "
                       "error of the best mean: list the simpler, more regularised values first)",
                       choices=("best", "one_standard_error"))
    test: bool = option(True, "refit the best setting on the whole training part and evaluate it once on the test "
                        "part (written beside the validation spread, with best.toml)")


@dataclass
class CurveConfig:
    sizes: list[int] = option([], "training sizes; empty = 8 log-spaced sizes from 100 to all training documents",
                              min=1, max=MAX_DOCUMENTS)
    seeds: int = option(3, "training samples (seeds) per size", min=1, max=1000)
    schedule: str = option("fixed_updates", "minibatch models at smaller sizes: 'fixed_updates' keeps the "
                           "number of minibatch updates of the full-size fit (smaller batches, more passes, "
                           "at most curve.max_passes); 'as_config' uses the config's batch_size and npasses "
                           "at every size", choices=("fixed_updates", "as_config"))
    max_passes: int = option(200, "fixed_updates: the most passes a small sample gets", min=1, max=100_000)


@dataclass
class BenchConfig:
    corpora: list[str] = option([], "`mlnb bench`: study configs of the corpora (paths from the current folder, "
                                "as data paths are); each gives its [data], [features], task and report.category, "
                                "this file everything else (models, eval, curve, seed)")
    set: list[str] = option([], "overrides applied to every corpus after that, e.g. 'data.max_train_documents=2000'")
    metric: str = option("macro_auc", "the test metric the models are ranked by on each corpus (it must exist for "
                         "every corpus's task)", choices=SUMMARY_METRICS + MULTICLASS_METRICS)
    alpha: float = option(0.05, "level of the Friedman test, the Nemenyi critical difference and Holm's adjustment",
                          min=0, max=1, exclusive_min=True, exclusive_max=True)
    curves: bool = option(False, "also learning curves of every model on every corpus ([curve] sizes and seeds) "
                          "and the training size where each compared pair's curves cross (Ng & Jordan 2001)")


@dataclass
class ModelSpec:
    """One model of a study: ``[models.<name>]`` with its kind and that kind's options."""

    name: str
    kind: str
    options: Any  # the kind's options dataclass
    enabled: bool = True
    label: str = ""  # empty = the kind's description of its options
    decision: str = ""  # empty = eval.decision
    random_state: int = -1  # seed of this model's training (minibatch order, initialisation); -1 = the study's seed

    def training_seed(self, default: int) -> int:
        """The seed this model trains with: its ``random_state``, or ``default`` (the study's seed) when -1."""
        return self.random_state if self.random_state >= 0 else default

    def display_label(self) -> str:
        return self.label or get_kind(self.kind).describe(self.options)

    def solver_state(self) -> tuple[float, str]:
        """(Bytes per weight its kind's solver holds besides W, the option that sets them), for mlnb.budget."""
        return get_kind(self.kind).state_per_weight(self.options)

    def processes(self) -> tuple[int, str]:
        """(The worker processes one fit starts, the option that sets them), from its kind, for mlnb.budget."""
        return get_kind(self.kind).processes(self.options)

    def weights(self, task: str = "multilabel") -> tuple[str, list[str]]:
        """(How its kind holds its weights, 'dense' V × K or 'sparse' pairs; the kinds with sparse weights that give
        its scores in ``task``), for mlnb.budget."""
        kind = get_kind(self.kind)
        return kind.weights, kind.sparse_equivalents(task)


#: keys every model table has besides its kind's options
MODEL_KEYS = {"kind": "model kind (see the list above)", "enabled": "fit and evaluate this model",
              "label": "name in tables and legends; empty = a description of the kind and options",
              "decision": "this model's decision rule (see eval.decision); empty = eval.decision",
              "random_state": "seed of this model's training (minibatch order, initialisation); -1 = the study's seed"}
DEFAULT_MODELS = {"nb": naive_bayes.KIND.name, "lr": logistic.KIND.name}  # the classic study: NB against LR


def _default_models() -> dict[str, ModelSpec]:
    return {name: ModelSpec(name, kind, KINDS[kind].options()) for name, kind in DEFAULT_MODELS.items()}


ENGINES = ("local", "dask")


@dataclass
class EngineConfig:
    kind: str = option("local", "where a streaming study runs: 'local' (this process) or 'dask' (a Dask cluster: "
                       "workers read their own partitions)", choices=ENGINES)
    address: str = option("", "dask: address of a running scheduler (e.g. 'tcp://10.0.0.5:8786'); empty = start a "
                          "LocalCluster on this machine")
    n_workers: int = option(2, "dask LocalCluster: worker processes", min=1, max=256)
    threads_per_worker: int = option(1, "dask LocalCluster: threads per worker", min=1, max=256)
    timeout: float = option(30.0, "dask: seconds to wait for the scheduler (and for workers to appear)",
                            min=0, exclusive_min=True, max=86_400)
    retries: int = option(1, "dask: times a task is retried on another worker when its worker dies", min=0, max=10)
    mix_every: int = option(16, "dask, engine.minibatch = 'mixing': the workers' parameters are averaged every this many "
                            "minibatches of each worker (iterative parameter mixing; shards are cut to fit, other "
                            "sources mix after each file)", min=1, max=1_000_000)
    minibatch: str = option("one_worker", "dask: where minibatch logistic regression trains: 'one_worker' (one worker "
                            "runs the one-machine minibatch solver over every partition in order: the same numbers as one "
                            "machine) or 'mixing' (every worker trains on its own partitions and their parameters are "
                            "averaged every engine.mix_every minibatches: parallel, but not the same model; see "
                            "experiments/bench_mixing.py)", choices=("one_worker", "mixing"))
    spill_folder: str = option("", "streaming: folder for the test scores on disk while they are evaluated (documents "
                               "× categories float32 per model; deleted after the run), and for the (word, category) "
                               "counters of a model with sparse weights beyond its own max_count_memory (the one "
                               "budget of its counters, an option of its kind); empty = the system's temporary "
                               "folder. On a cluster of several machines it must be a folder every worker and this "
                               "machine share")
    scores: str = option("auto", "where a streamed study holds the test scores while they are evaluated: 'memory', "
                         "'disk' (spilled: no bootstrap or multiclass; micro AUC/AP binned), or 'auto' = in "
                         "memory when they fit engine.max_score_memory; 'top_k' (any study, multilabel, "
                         "eval.ranking_k > 0) keeps only each test document's eval.ranking_k best categories, "
                         "ranked while scoring (n × k, never n × K): the ranking metrics at k and RCut's "
                         "per-category precision, recall and F1, but no AUC, curves, log loss or calibration",
                         choices=("auto", "memory", "disk", "top_k"))
    max_score_memory: int = option(1024, "engine.scores = 'auto': MiB of test scores (12 bytes per document, category "
                                   "and model) held in memory at most; more are spilled to disk", min=1,
                                   max=2**30)
    device: str = option("cpu", "where the models are fitted and scored: 'cpu' (the numba kernels on every core) or "
                         "'gpu' (the models' array code on CuPy: pip install 'mlnb[gpu]'; studies held in memory; a model "
                         "whose kind has no device fit stays on the CPU); 'array-numpy' runs the GPU code on numpy, for "
                         "tests",
                         choices=("cpu", "gpu", "array-numpy"))
    max_fits: int = option(10_000, "model fits one command may make (sweep: settings × repeats × models, and the "
                           "refit; curve: sizes × seeds × models; eval.folds multiplies them): more are refused "
                           "before any data is read; raise it for a larger study", min=1, max=10**9)
    max_total_passes: int = option(1_000_000, "passes over the training documents one command may make, summed over "
                                   "its fits, each fit counted at the least passes its options make (npasses; svrg: "
                                   "1 + svrg_inner_passes; one for a solver to a tolerance): more are refused before "
                                   "the first fit; raise it for a longer study", min=1, max=10**12)


@dataclass
class TrackingConfig:
    mlflow_uri: str = option("", "log every run to MLflow at this tracking URI (e.g. 'file:./mlruns' or "
                             "'http://host:5000'): params = the flattened config, metrics = the summary, artifacts "
                             "= the results folder; needs `pip install mlnb[tracking]`; empty = no tracking")
    experiment: str = option("", "MLflow experiment the runs go to; empty = the study's name")


@dataclass
class StudyConfig:
    name: str = option("", "name of the study; empty = the config file's name")
    seed: int = option(0, "the one-knob seed: data.seed and every model's random_state where they are -1 (so it sets "
                       "data generation, split, subsampling and training at once), and the bootstrap", min=0,
                       max=2**32 - 1)
    task: str = option("multilabel", "'multilabel': any number of categories per document, one-vs-rest; "
                       "'multiclass': exactly one class per document, joint posterior and argmax", choices=TASKS)
    data: DataConfig = section(DataConfig)
    features: FeaturesConfig = section(FeaturesConfig)
    models: dict[str, ModelSpec] = field(default_factory=_default_models,
                                         metadata={"help": "the models of the study, [models.<name>]"})
    eval: EvalConfig = section(EvalConfig)
    report: ReportConfig = section(ReportConfig)
    sweep: SweepConfig = section(SweepConfig)
    curve: CurveConfig = section(CurveConfig)
    engine: EngineConfig = section(EngineConfig)
    tracking: TrackingConfig = section(TrackingConfig)
    bench: BenchConfig = section(BenchConfig)

    def data_seed(self, default: int | None = None) -> int:
        """The seed of what picks documents: ``data.seed``, or when it is -1 ``default`` (the study's
        ``seed`` when not given)."""
        return self.data.seed if self.data.seed >= 0 else (self.seed if default is None else default)

    def study_models(self) -> list[ModelSpec]:
        """The enabled models, in config order."""
        return [spec for spec in self.models.values() if spec.enabled]

    def compared_pairs(self) -> list[tuple[str, str]]:
        """(a, b) model names compared per category: report.compare, or every model against the first."""
        if not self.report.paired_tests:
            return []
        if self.report.compare:
            return [tuple(pair) for pair in self.report.compare]
        names = [spec.name for spec in self.study_models()]
        return [(name, names[0]) for name in names[1:]]


# -- loading and validation -------------------------------------------------------------------
_TYPE_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _type_name(kind) -> str:
    if typing.get_origin(kind) is list:
        item = _type_name(typing.get_args(kind)[0]).split(" ", 1)[-1]
        return "a list of " + (item if item.startswith("list") else item + "s")
    return _TYPE_NAMES[kind]


def _check_value(value: Any, kind: type, meta: dict, where: str) -> Any:
    """The value converted to ``kind``, or an MlnbError that names ``where``."""
    if typing.get_origin(kind) is list:
        (item_kind,) = typing.get_args(kind)
        if not isinstance(value, list):
            raise MlnbError(f"{where}: expected {_type_name(kind)}, got {shown(value)}")
        return [_check_value(item, item_kind, meta, f"{where}[{i}]") for i, item in enumerate(value)]
    ok = (isinstance(value, bool) if kind is bool else
          isinstance(value, int) and not isinstance(value, bool) if kind is int else
          isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float else
          isinstance(value, str))
    if not ok:
        raise MlnbError(f"{where}: expected {_TYPE_NAMES[kind]}, got {shown(value)}")
    if kind is str and len(value) > MAX_STRING_LENGTH:
        raise MlnbError(f"{where}: expected at most {MAX_STRING_LENGTH} characters, got {len(value):,}")
    if kind is str:  # from --set: refused now, not when the results folder saves the config
        _check_writable(value, where)
    if kind is float:
        value = float(value)
        if not math.isfinite(value):
            raise MlnbError(f"{where}: expected a finite number, got {shown(value)}")
    if meta.get("choices") is not None and value not in meta["choices"]:
        allowed = ", ".join(repr(c) for c in meta["choices"])
        raise MlnbError(f"{where}: expected one of {allowed}, got {shown(value)}")
    low, high = meta.get("min"), meta.get("max")
    if low is not None and (value <= low if meta.get("exclusive_min") else value < low):
        raise MlnbError(f"{where}: expected a value {'>' if meta.get('exclusive_min') else '>='} "
                        f"{low}, got {shown(value)}")
    if high is not None and (value >= high if meta.get("exclusive_max") else value > high):
        raise MlnbError(f"{where}: expected a value {'<' if meta.get('exclusive_max') else '<='} "
                        f"{high}, got {shown(value)}")
    return value


def _origin(dotted: str, source: str, overridden: set, set_label: str) -> str:
    from_set = any(o == dotted or o.startswith(dotted + ".") for o in overridden)
    return set_label if from_set else source


def _unknown_key(origin: str, prefix: str, key: str, valid) -> MlnbError:
    close = difflib.get_close_matches(key, list(valid), n=1) if len(key) <= MAX_NAME_LENGTH else []
    hint = f"; did you mean '{prefix}{close[0]}'?" if close else f"; valid keys: {', '.join(valid)}"
    return MlnbError(f"{origin}: unknown key {shown(prefix + key)}{hint}")


def _build(cls, table: dict, prefix: str, source: str, overridden: set, set_label: str = "--set"):
    """An instance of dataclass ``cls`` from a TOML table, validated key by key."""
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        origin = _origin(dotted, source, overridden, set_label)
        if key not in fields:
            raise _unknown_key(origin, prefix, key, fields)
        kind = hints[key]
        if key == "models" and cls is StudyConfig:
            if not isinstance(value, dict):
                raise MlnbError(f"{origin}: 'models' must be tables [models.<name>], got {shown(value)}")
            values[key] = {name: _build_model(name, spec, source, overridden, set_label)
                           for name, spec in value.items()}
        elif dataclasses.is_dataclass(kind):
            if not isinstance(value, dict):
                raise MlnbError(f"{origin}: '{dotted}' must be a table ([{dotted}]), got {shown(value)}")
            values[key] = _build(kind, value, f"{dotted}.", source, overridden, set_label)
        else:
            values[key] = _check_value(value, kind, fields[key].metadata, f"{origin}: {dotted}")
    return cls(**values)


def _build_model(name: str, table, source: str, overridden: set, set_label: str) -> ModelSpec:
    """``[models.<name>]``: its kind, the generic keys, and the kind's options."""
    prefix = f"models.{name}."
    origin = _origin(f"models.{name}", source, overridden, set_label)
    if len(name) > MAX_MODEL_NAME_LENGTH or not _MODEL_NAME.fullmatch(name):
        raise MlnbError(f"{origin}: model name {shown(name)}: expected letters, digits, '_' or '-' (at most "
                        f"{MAX_MODEL_NAME_LENGTH}: it names files and columns)")
    if not isinstance(table, dict):
        raise MlnbError(f"{origin}: 'models.{name}' must be a table ([models.{name}] with a kind), got {shown(table)}")
    table = dict(table)
    if "kind" not in table:
        raise MlnbError(f"{origin}: [models.{name}] has no 'kind'; expected one of "
                        f"{', '.join(map(repr, KINDS))}, e.g. kind = \"{DEFAULT_MODELS['nb']}\"")
    kind_origin = _origin(prefix + "kind", source, overridden, set_label)
    kind = get_kind(_check_value(table.pop("kind"), str, {}, f"{kind_origin}: {prefix}kind"),
                    f"{kind_origin}: {prefix}kind")
    generic = {}
    for key, key_type, meta in (("enabled", bool, {}), ("label", str, {}),
                                ("decision", str, {"choices": ("",) + DECISION_RULES}),
                                ("random_state", int, {"min": -1, "max": 2**32 - 1})):
        if key in table:
            generic[key] = _check_value(table.pop(key), key_type, meta,
                                        f"{_origin(prefix + key, source, overridden, set_label)}: {prefix}{key}")
    option_names = [f.name for f in dataclasses.fields(kind.options)]
    for key in table:
        if key not in option_names:
            origin = _origin(prefix + key, source, overridden, set_label)
            owners = [other.name for other in KINDS.values()
                      if key in {f.name for f in dataclasses.fields(other.options)}]
            if owners:
                raise MlnbError(f"{origin}: unknown key '{prefix}{key}': '{key}' is an option of kind "
                                f"{' and '.join(map(repr, owners))}, not of {kind.name!r} (models.{name}.kind)")
            raise _unknown_key(origin, prefix, key, list(MODEL_KEYS) + option_names)
    label = generic.get("label", "")
    if len(label) > MAX_LABEL_LENGTH or any(ord(c) < 32 or c in _LINE_BREAKS for c in label):
        raise MlnbError(f"{_origin(prefix + 'label', source, overridden, set_label)}: {prefix}label: expected one line "
                        f"of at most {MAX_LABEL_LENGTH} characters, no control characters (it names the model in "
                        f"tables, legends and report.md), got {shown(label)}")
    options = _build(kind.options, table, prefix, source, overridden, set_label)
    return ModelSpec(name=name, kind=kind.name, options=options, **generic)


_MODEL_NAME = re.compile(r"[A-Za-z0-9_-]+")
_LINE_BREAKS = "\x85\u2028\u2029"  # besides the control characters below 32 (\n, \r, \t, ...)
_OLD_SECTIONS = DEFAULT_MODELS  # [nb] and [lr] were the two models before any number could be named


def _old_form_error(table: dict, source: str) -> MlnbError | None:
    """An old-style [nb]/[lr] config: say what the new form is."""
    old = [key for key in _OLD_SECTIONS if key in table]
    if not old:
        return None
    lines = []
    for key in old:
        section_table = table[key] if isinstance(table[key], dict) else {}
        kind = (sklearn_logistic.KIND.name if key == "lr" and section_table.get("engine") == "sklearn" else _OLD_SECTIONS[key])
        lines.append(f'[models.{key}] kind = "{kind}"')
    return MlnbError(f"{source}: [{'] and ['.join(old)}] are the old form of a study's models (and nb.*, lr.* its "
                     f"keys); name each model in its own table with its kind and options, e.g. {'; '.join(lines)}, "
                     f"and its keys models.<name>.* (lr.engine = \"sklearn\" is kind = \"sklearn_sgd\" with the "
                     f"[lr.sklearn] keys; lr.init = \"nb\" is init_from = \"nb\"); `mlnb show-config` lists every "
                     f"kind and option")


def _check_study(config: StudyConfig, origin: str) -> None:
    """What single keys cannot check: references between models, pairs, the sweep's model."""
    if config.eval.bootstrap == 1:  # the schema admits 0 (none) and 1..; one replicate is both ends of an interval
        raise MlnbError(f"{origin}: eval.bootstrap = 1: a single resample gives a zero-width interval; use 0 (no "
                        "intervals) or at least 2 (200 by default)")
    models = config.study_models()
    if not models:
        raise MlnbError(f"{origin}: no enabled model: give at least one [models.<name>] with enabled = true")
    names = [spec.name for spec in models]  # config order
    disabled = [name for name, spec in config.models.items() if not spec.enabled]

    def why(name: str) -> str:
        return f"model {name!r} is disabled (enabled = false)" if name in disabled else f"there is no model {name!r}"

    for spec in models:
        for used in get_kind(spec.kind).uses(spec.options):
            if used == spec.name or used not in names:
                reason = "a model cannot start from itself" if used == spec.name else why(used)
                raise MlnbError(f"{origin}: models.{spec.name}.init_from = {used!r}: expected the name of another "
                                f"enabled model of the study ({', '.join(n for n in names if n != spec.name) or 'none'}); "
                                f"{reason}")
    _dependency_order(models, origin)
    seen = set()
    for i, pair in enumerate(config.report.compare):
        if len(pair) != 2 or pair[0] == pair[1] or not set(pair) <= set(names):
            missing = [why(name) for name in pair if name not in names]
            raise MlnbError(f"{origin}: report.compare[{i}] = {pair!r}: expected two different names of enabled "
                            f"models ({', '.join(names)})" + (f"; {'; '.join(missing)}" if missing else ""))
        if frozenset(pair) in seen:
            raise MlnbError(f"{origin}: report.compare[{i}] = {pair!r}: this pair is compared already")
        seen.add(frozenset(pair))
    for spec in models:
        kind = get_kind(spec.kind)
        if config.task not in kind.tasks:
            raise MlnbError(f"{origin}: models.{spec.name}: kind {spec.kind!r} does not do task = {config.task!r} "
                            f"(it does: {', '.join(kind.tasks)}); kinds that do: "
                            f"{', '.join(k.name for k in KINDS.values() if config.task in k.tasks)}")
        try:
            kind.check(spec.options, config.task)
        except MlnbError as error:
            raise MlnbError(f"{origin}: models.{spec.name}: {error}") from None
    if config.task == "multiclass":
        _check_multiclass_data(config, origin)
    _check_features(config, origin)
    _check_streaming(config, origin)
    _check_engine(config, origin)
    _check_top_k(config, origin)
    check_tracking(config, origin)
    rules = {config.eval.decision} | {spec.decision for spec in models if spec.decision}
    if config.eval.decision_metric != "f1" and "scutfbr" in rules:
        raise MlnbError(f"{origin}: eval.decision_metric = {config.eval.decision_metric!r} with scutfbr: its fallback "
                        "is defined on a low F-score; use decision_metric = 'f1' or scut")
    if config.sweep.model != "auto" and config.sweep.model not in names:
        raise MlnbError(f"{origin}: sweep.model = {config.sweep.model!r}: expected 'auto' or an enabled model "
                        f"({', '.join(names)}); {why(config.sweep.model)}")


def _check_features(config: StudyConfig, origin: str) -> None:
    """features.ngram_range: [min_n, max_n] with 1 <= min_n <= max_n <= 5 (the schema checks each number)."""
    from mlnb.data.vocabulary import check_ngram_range

    try:
        check_ngram_range(config.features.ngram_range)
    except MlnbError as error:
        raise MlnbError(f"{origin}: {error}") from None


def _check_streaming(config: StudyConfig, origin: str) -> None:
    """What a study read chunk by chunk (data.streaming) or run on Dask can and cannot do.

    Each refusal is something that needs the whole corpus in memory before training (a feature
    transform, a sample), or a model kind that declares it learns from every document at once;
    the message says what to use instead. Whatever needs every test score at once is refused by
    the study only when the scores do not fit in memory (``engine.scores``).
    """
    data = config.data
    if config.engine.kind == "dask" and not data.streaming:
        raise MlnbError(f"{origin}: engine.kind = 'dask' runs streaming studies: set data.streaming = true (sources "
                        f"{', '.join(STREAMING_SOURCES)})")
    if not data.streaming:
        return
    if data.source not in STREAMING_SOURCES:
        raise MlnbError(f"{origin}: data.streaming = true: data.source = {data.source!r} is read whole; sources read "
                        f"chunk by chunk: {', '.join(STREAMING_SOURCES)} (`mlnb convert` writes shards from any source)")
    for spec in config.study_models():
        if not KINDS[spec.kind].streams:
            streaming = ", ".join(name for name, kind in KINDS.items() if kind.streams)
            raise MlnbError(f"{origin}: models.{spec.name}: kind {spec.kind!r} learns from every training document "
                            f"in memory at once (data.streaming = true); kinds that learn from a stream: {streaming}")
    features = config.features
    # a text source's first pass counts the training terms: its vocabulary is pruned there (mlnb.data.vocabulary)
    pruned_in_vocabulary = SOURCES.named(data.source, "data.source").prunes_vocabulary \
        and features.vectorizer == "count"
    if features.transform != "none" or ((features.min_df or features.max_features) and not pruned_in_vocabulary):
        pruning = ", ".join(name for name, kind in SOURCES.items() if kind.prunes_vocabulary)
        raise MlnbError(f"{origin}: features.transform / min_df / max_features need a pass over the whole training "
                        "corpus before training; with data.streaming = true use transform = 'none', min_df = 0, "
                        "max_features = 0 (or transform the data before `mlnb convert`; the sources "
                        f"{pruning} with vectorizer = 'count' take min_df and max_features)")
    if data.max_train_documents:
        raise MlnbError(f"{origin}: data.max_train_documents needs the whole corpus to sample from; with "
                        "data.streaming = true use data.test_fraction or a smaller set of shards")


def _check_engine(config: StudyConfig, origin: str) -> None:
    """engine.device (a GPU where it says 'gpu'); engine.address: a Dask scheduler's address,
    [protocol://]host:port, or empty."""
    if config.engine.device != "cpu":
        if config.data.streaming:
            raise MlnbError(f"{origin}: engine.device = {config.engine.device!r} fits studies held in memory; with "
                            "data.streaming = true use engine.device = 'cpu'")
        if not any(KINDS[spec.kind].runs_on_device for spec in config.study_models() if spec.kind in KINDS):
            on_device = ", ".join(name for name, kind in KINDS.items() if kind.runs_on_device)
            raise MlnbError(f"{origin}: engine.device = {config.engine.device!r}: no model of the study runs on a "
                            f"device (kinds that do: {on_device}); use engine.device = 'cpu'")
        if config.engine.device == "gpu":
            from mlnb.models.array.device import gpu_problem  # imports CuPy: only when a study asks for the GPU

            problem = gpu_problem()
            if problem:
                raise MlnbError(f"{origin}: engine.device = 'gpu': {problem}; use engine.device = 'cpu'")
    address = config.engine.address
    if not address:
        return
    match = _DASK_ADDRESS.fullmatch(address)
    if match is None or not 0 < int(match.group(1)) < 65536:
        raise MlnbError(f"{origin}: engine.address = {shown(address)}: expected a Dask scheduler's address "
                        "[tcp://]host:port (port 1-65535), e.g. 'tcp://10.0.0.5:8786'; or empty for a LocalCluster")


def _check_top_k(config: StudyConfig, origin: str) -> None:
    """engine.scores = 'top_k' keeps each test document's eval.ranking_k best categories, one-vs-rest: a
    multilabel study with eval.ranking_k > 0, decided by RCut within them (eval.decision 'auto' or 'rcut' with
    eval.rcut_k ≤ eval.ranking_k), uncalibrated (no score of the other categories is kept)."""
    if config.engine.scores != "top_k":
        return
    ev, why = config.eval, "engine.scores = 'top_k' keeps only each test document's eval.ranking_k best categories"
    if config.task != "multilabel":
        raise MlnbError(f"{origin}: {why} (one-vs-rest); task = {config.task!r} needs every class's score: use "
                        "engine.scores = 'auto'")
    if ev.ranking_k == 0:
        raise MlnbError(f"{origin}: {why}: eval.ranking_k = 0 keeps none; set eval.ranking_k ≥ 1 (e.g. 5)")
    rules = {f"eval.decision = {ev.decision!r}": ev.decision} | {
        f"models.{spec.name}.decision = {spec.decision!r}": spec.decision for spec in config.study_models()
        if spec.decision}
    for key, rule in rules.items():
        if rule not in (AUTO_DECISION, "rcut"):
            raise MlnbError(f"{origin}: {key}: {why}, so it decides by 'rcut' (a document's best categories); "
                            "use eval.decision = 'auto' or 'rcut'")
    if "rcut" in rules.values() and ev.rcut_k > ev.ranking_k:
        raise MlnbError(f"{origin}: eval.rcut_k = {ev.rcut_k}: {why} (eval.ranking_k = {ev.ranking_k}); use "
                        "eval.rcut_k ≤ eval.ranking_k")
    if ev.calibration != "none":
        raise MlnbError(f"{origin}: eval.calibration = {ev.calibration!r}: {why}, which are not calibrated; use "
                        "eval.calibration = 'none'")


def _check_multiclass_data(config: StudyConfig, origin: str) -> None:
    """Sources and settings that cannot give one class per document: a source that declares its documents
    multilabel (``SourceKind.labels``) or refuses the task itself (``SourceKind.check_task``)."""
    data = config.data
    source = SOURCES[data.source]
    options = getattr(data, source.name)
    try:
        source.check_task(options, "multiclass")
    except MlnbError as error:
        raise MlnbError(f"{origin}: {error}") from None
    if source.labels_of(options) == "multi":
        raise MlnbError(f"{origin}: task = 'multiclass' needs single-label data; data.source = {data.source!r} is "
                        "multilabel (use svmlight with one label per line, text with labels = 'single', "
                        "arff, or bundled)")
    if config.eval.decision not in ("fixed", AUTO_DECISION) or config.eval.calibration != "none" or any(
            spec.decision not in ("", "fixed") for spec in config.study_models()):
        raise MlnbError(f"{origin}: task = 'multiclass' decides by the most probable class: eval.decision (and "
                        "every model's decision) must be 'fixed' (or eval.decision 'auto') and eval.calibration 'none'")
    if config.eval.untrainable == "prior":
        raise MlnbError(f"{origin}: eval.untrainable = 'prior' replaces one-vs-rest scores; with task = 'multiclass' "
                        "use 'exclude' or 'keep'")


def _dependency_order(models: list[ModelSpec], origin: str = "config") -> list[ModelSpec]:
    """The models with every model after the ones it starts from (config order otherwise)."""
    by_name = {spec.name: spec for spec in models}
    ordered, state = [], {}

    def visit(spec, chain):
        if state.get(spec.name) == "done":
            return
        if spec.name in chain:
            raise MlnbError(f"{origin}: models start from each other in a circle: {' -> '.join(chain + [spec.name])}")
        for used in get_kind(spec.kind).uses(spec.options):
            visit(by_name[used], chain + [spec.name])
        state[spec.name] = "done"
        ordered.append(spec)

    for spec in models:
        visit(spec, [])
    return ordered


def fit_order(config: StudyConfig, wanted: list[str] | None = None) -> list[ModelSpec]:
    """The enabled models to fit for ``wanted`` (default: all), each after the models it starts from."""
    ordered = _dependency_order(config.study_models())
    if wanted is None:
        return ordered
    needed, todo = set(), list(wanted)
    by_name = {spec.name: spec for spec in ordered}
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo += get_kind(by_name[name].kind).uses(by_name[name].options)
    return [spec for spec in ordered if spec.name in needed]


def parse_override(text: str) -> tuple[list[str], Any]:
    """'models.nb.alpha=0.1' -> (['models', 'nb', 'alpha'], 0.1); the value is read as TOML, else as a string."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise MlnbError(f"--set {shown(text)}: expected key=value, e.g. models.nb.alpha=0.1")
    try:
        value = tomllib.loads(f"value = {raw.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    except RecursionError:  # arrays or inline tables nested hundreds deep: no config key takes that
        raise MlnbError(f"--set {shown(key)}: the value is nested too deeply") from None
    except ValueError as error:  # e.g. an integer of more than 4,300 digits
        raise MlnbError(f"--set {shown(key)}: {shown(str(error), 200)}") from None
    return key.split("."), value


def _apply_overrides(table: dict, overrides: list[str], origin: str) -> set[str]:
    """Write 'a.b=value' overrides into a nested table; return the dotted keys written."""
    overridden = set()
    for text in overrides:
        keys, value = parse_override(text)
        node = table
        for part in keys[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise MlnbError(f"{origin} {shown(text)}: {shown(part)} is not a section")
        node[keys[-1]] = value
        overridden.add(".".join(keys))
    return overridden


def load_config(path: str | Path | None, overrides: list[str] = ()) -> StudyConfig:
    """The validated study config: defaults < TOML file < ``--set`` overrides.

    A file without ``[models]`` studies the default models (``nb`` and ``lr``); a file
    with ``[models]`` studies exactly the models it names.
    """
    table: dict = {}
    source = "defaults"
    if path is not None:
        path = Path(path)
        source = str(path)
        if path.is_dir():
            raise MlnbError(f"{path}: is a directory; expected a config file (TOML)")
        if not path.exists():
            raise MlnbError(f"{path}: no such config file")
        with open_regular(path, "a config file (TOML)") as file:  # a FIFO or a device: refused, never waited on
            text = file.read(MAX_CONFIG_BYTES + 1)
        if len(text) > MAX_CONFIG_BYTES:
            raise MlnbError(f"{path}: more than {MAX_CONFIG_BYTES:,} bytes; expected a config file (TOML)")
        try:  # utf-8-sig: a byte-order mark (as some Windows editors write) is not part of the TOML
            table = tomllib.loads(text.decode("utf-8-sig"))
        except tomllib.TOMLDecodeError as error:
            raise MlnbError(f"{path}: not valid TOML ({error})") from None
        except RecursionError:  # arrays or inline tables nested hundreds deep: no config key takes that
            raise MlnbError(f"{path}: not a config this program reads: arrays or tables nested too deeply") from None
        except UnicodeDecodeError:
            raise MlnbError(f"{path}: not a UTF-8 text file") from None
        except ValueError as error:  # e.g. an integer of more than 4,300 digits
            raise MlnbError(f"{path}: not a config this program reads ({shown(str(error), 200)})") from None
    if "models" not in table:
        table["models"] = {name: {"kind": kind} for name, kind in DEFAULT_MODELS.items()}
    overridden = _apply_overrides(table, overrides, "--set")
    old_set = any(key.split(".")[0] in _OLD_SECTIONS for key in overridden)
    error = _old_form_error(table, "--set" if old_set else source)
    if error:
        raise error
    config = _build(StudyConfig, table, "", source, overridden)
    if not config.name:
        config.name = path.stem if path is not None else "study"
    if len(config.name) > MAX_NAME_LENGTH or not _NAME.fullmatch(config.name):
        origin = "--set" if "name" in overridden else (source if "name" in table else f"{source}: its file name")
        raise MlnbError(f"{origin}: name: expected letters, digits, '.', '_' or '-' (at most {MAX_NAME_LENGTH}, not "
                        f"starting with '.'), as it names the results folder; got {shown(config.name)}")
    _check_study(config, f"{source} with --set" if overridden else source)
    return config


def with_decision_resolved(config: StudyConfig) -> StudyConfig:
    """The config with eval.decision = "auto" replaced by the rule it stands for in this study (``auto_decision``):
    a study resolves it when it opens its documents, so that its report and results name the rule it used.
    With engine.scores = "top_k" it stands for 'rcut' at eval.rcut_k = eval.ranking_k: each document's k best
    categories, all a study that keeps only those can decide."""
    if config.eval.decision != AUTO_DECISION:
        return config
    if config.engine.scores == "top_k" and config.task == "multilabel" and config.eval.ranking_k:
        return dataclasses.replace(config, eval=dataclasses.replace(config.eval, decision="rcut",
                                                                    rcut_k=config.eval.ranking_k))
    rule = auto_decision(config.task)
    return dataclasses.replace(config, eval=dataclasses.replace(config.eval, decision=rule))


# -- writing ---------------------------------------------------------------------------------
# Every piece of TOML text written (mlnb init, show-config, a results folder's config.toml, best.toml, a bench's
# config.toml) goes through toml_value, toml_key and toml_comment: a name a corpus chose (a category folder, a
# label, a column) that ended a string or a comment early would write keys of its own into the config.
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_STRING_UNSAFE = re.compile(r'["\\]|[^ -~]')
_COMMENT_UNSAFE = re.compile(r"[^ -~]")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match) -> str:
    """A character as itself where Python prints it as itself, else as a TOML escape: the controls TOML
    forbids, and those an editor or a line-by-line reader takes for a line break (U+0085, U+2028, U+2029)
    or does not show (bidi overrides, zero-width characters)."""
    character = match.group()
    if character in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[character]
    if character.isprintable():
        return character
    code = ord(character)
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"


def _check_writable(text: str, key: str) -> None:
    """Refuse a lone surrogate (how Python names a byte of a file name or an argument that is not UTF-8):
    TOML is UTF-8 and has no escape for one."""
    if _SURROGATE.search(text):
        raise MlnbError(f"{key + ': ' if key else ''}{shown(text)} is not UTF-8 text (a file or folder name in "
                        "another encoding?), which no TOML file can hold; rename it")


def toml_string(text: str, key: str = "") -> str:
    """``text`` as a TOML basic string on one line: loads back as ``text`` (a lone surrogate is refused)."""
    _check_writable(text, key)
    return '"' + _STRING_UNSAFE.sub(_escape, text) + '"'


def toml_key(name: str) -> str:
    """``name`` as a TOML key of one table level: bare where TOML allows it, else a quoted string."""
    return name if _BARE_KEY.fullmatch(name) else toml_string(name)


def toml_comment(text: str) -> str:
    """``text`` as one TOML comment line ('# ' first): every character that could end the comment early
    (any line break, '\\r', U+2028 ...) or that TOML forbids in a comment is written as its escape."""
    return "# " + _COMMENT_UNSAFE.sub(_escape, text) if text else "#"


def toml_value(value: Any, key: str = "") -> str:
    """A value as TOML text on one line (the inverse of reading it back); ``key`` names it in an error."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v, key) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):  # repr of the float itself: numpy's float64 would write np.float64(...)
        return repr(float(value))
    if isinstance(value, str):
        return toml_string(value, key)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v, key)}" for k, v in value.items()) + "}"
    if isinstance(value, (datetime.date, datetime.time)):  # as tomllib reads them (1979-05-27, 07:32:00)
        return value.isoformat()
    raise TypeError(f"{key or 'a value'}: {type(value).__name__} has no TOML form")


def dump_toml(config, prefix: str = "") -> str:
    """The config as TOML, every key written (with its help as a comment)."""
    scalars, tables = [], []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name == "models" and isinstance(config, StudyConfig):
            tables += [_dump_model(spec) for spec in value.values()]
        elif dataclasses.is_dataclass(value):
            tables.append(f"\n[{prefix}{toml_key(f.name)}]\n" + dump_toml(value, f"{prefix}{toml_key(f.name)}."))
        else:
            scalars.append(f"{toml_key(f.name)} = {toml_value(value, prefix + f.name)}  "
                           + toml_comment(f.metadata["help"]))
    return "\n".join(scalars) + "\n" + "".join(tables)


def _dump_model(spec: ModelSpec) -> str:
    kind, table = get_kind(spec.kind), f"models.{toml_key(spec.name)}"
    lines = [f"\n[{table}]", f"kind = {toml_value(spec.kind, table + '.kind')}  " + toml_comment(kind.help)]
    lines += [f"{key} = {toml_value(getattr(spec, key), f'{table}.{key}')}  " + toml_comment(MODEL_KEYS[key])
              for key in ("enabled", "label", "decision", "random_state")]
    return "\n".join(lines) + "\n" + dump_toml(spec.options, f"{table}.")


def describe_kinds() -> str:
    """Every registered model kind with its options, as TOML comments (for ``mlnb show-config``)."""
    lines = [toml_comment("Model kinds: [models.<name>] kind = \"...\" and that kind's options (defaults shown).")]
    for kind in KINDS.values():
        lines += ["#", toml_comment(f"kind = {toml_value(kind.name)}: {kind.help}")]
        for f in dataclasses.fields(kind.options):
            default = getattr(kind.options(), f.name)
            lines.append(toml_comment(f"  {f.name} = {toml_value(default)}  — {f.metadata['help']}"))
    return "\n".join(lines) + "\n"


def config_dict(config) -> dict:
    """The config as a TOML-shaped dict (models as {name: {kind, enabled, label, options...}})."""
    table = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name == "models" and isinstance(config, StudyConfig):
            table[f.name] = {spec.name: {"kind": spec.kind, "enabled": spec.enabled, "label": spec.label,
                                         "decision": spec.decision, "random_state": spec.random_state,
                                         **dataclasses.asdict(spec.options)}
                             for spec in value.values()}
        elif dataclasses.is_dataclass(value):
            table[f.name] = config_dict(value)
        else:
            table[f.name] = value
    return table


def with_overrides(config: StudyConfig, overrides: list[str], origin: str = "--set") -> StudyConfig:
    """A copy of ``config`` with 'key=value' overrides, validated like a file."""
    table = config_dict(config)
    new = _build(StudyConfig, table, "", origin, _apply_overrides(table, overrides, origin), origin)
    _check_study(new, origin)
    return new
