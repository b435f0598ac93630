r"""Fit every model of a study from training documents, in memory or streamed.

In memory each estimator's own ``fit(X, Y)`` runs. Streamed, each model learns the way its kind
declares (``ModelKind.fits_from``), through one ``StreamTrainer`` over the source:

1. one counting pass over the training chunks for every model at once: the label counts
   N (K,), n and the Naive Bayes counts each model asks for (``ModelKind.count_request``);
   all are sums, so the result is the in-memory counts exactly, on any engine:

       N = Σ_p N_p,   n = Σ_p n_p,   counts = Σ_p counts_p

2. each model's ``fit_streamed`` hook: from the counts (Naive Bayes, the prior), by full passes whose
   sums a full-batch solver needs (``StreamTrainer.sum_over_chunks``: LR with ``solver = "lbfgs"``,
   the same fixed reduction tree here and on Dask), or by passes of minibatches
   (``StreamTrainer.minibatch``). In one process the minibatch engine steps through the chunks in order,
   exactly as through the documents in memory (up to the shuffle, which stays within
   ``data.shuffle_buffer`` chunks; with ``shuffle = false`` it is ``fit`` bit for bit). On Dask
   every worker runs a pass over its partitions from the same state θ and the states are
   averaged, weighted by documents (parameter mixing, Zinkevich et al. 2010 / McDonald et al.
   2010):

       θ ← Σ_p n_p·θ_p / Σ_p n_p            θ = (W, b, AdaGrad sums, step count)

A kind that needs every document in memory (``fits_from = "memory"``) is refused in one line
when the documents are streamed.
"""

from __future__ import annotations

import operator
import time
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.base import clone

from mlnb import progress
from mlnb.backends.tasks import (Counter, LogisticJob, Reading, TrainingCounts, add_or_none, count_partition,
                                 finished_naive_bayes, fit_logistic_here, lr_pass_partition, mix, sum_partition,
                                 worker_groups)
from mlnb.config import StudyConfig, fit_order
from mlnb.engine.documents import Documents
from mlnb.errors import MlnbError
from mlnb.models import KINDS, get_kind
from mlnb.models._linear import prior_log_odds
from mlnb.models.registry import CountRequest


class NoTrainingDocuments(MlnbError):
    """A streamed training part turned out empty (known only once it was read)."""


@dataclass(eq=False)
class Fitted:
    """What fitting gives: the estimators and their fit seconds by model name, and the training
    documents' label counts (N (K,) float64, n) and stored values. Streamed, the one counting pass
    that every model shares is ``counting_seconds``, outside each model's own seconds (as reading
    the data is, in memory)."""

    models: dict
    seconds: dict
    positives: np.ndarray
    n: int
    nnz: int
    counting_seconds: float = 0.0


def label_counts(Y) -> np.ndarray:
    """(K,) float64 documents per category of a 0/1 matrix (from integer counts)."""
    return np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()


def fit_models(config: StudyConfig, wanted: list[str] | None, documents: Documents, seed: int, labels: dict, *,
               backend=None, eval_set=None) -> Fitted:
    """Fit ``wanted`` (default: every enabled model) and the models they start from on ``documents``."""
    specs = fit_order(config, wanted)
    if documents.in_memory:
        return _fit_in_memory(config, specs, documents, seed, labels, eval_set)
    for spec in specs:
        kind = get_kind(spec.kind)
        if not kind.streams:
            streaming = ", ".join(name for name, other in KINDS.items() if other.streams)
            raise MlnbError(f"models.{spec.name}: kind {spec.kind!r} learns from every training document in memory "
                            f"at once; with data.streaming = true use a kind that learns from a stream ({streaming})")
    return _fit_streamed(config, specs, documents, seed, labels, backend)


def _fit_in_memory(config, specs, documents, seed: int, labels: dict, eval_set) -> Fitted:
    fitted, seconds = {}, {}
    X, Y = documents.X, documents.Y
    for spec in specs:
        kind = get_kind(spec.kind)
        estimator = kind.build(spec.options, seed, config.task)
        started = time.perf_counter()
        try:
            with progress.status(f"fitting {labels.get(spec.name, spec.name)}"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # untrainable categories are reported, not warned
                estimator.fit(X, Y, **kind.fit_arguments(spec.options, fitted, eval_set))
                estimator.weights_  # a lazy model (Naive Bayes) builds W here, so fit time includes it
        except MlnbError as error:
            raise MlnbError(f"models.{spec.name}: {error}") from None
        fitted[spec.name] = estimator
        seconds[spec.name] = time.perf_counter() - started
    return Fitted(fitted, seconds, label_counts(Y), X.shape[0], int(X.nnz))


def _fit_streamed(config, specs, documents, seed: int, labels: dict, backend) -> Fitted:
    source = documents.source
    reading = Reading(source, documents.chunk_size)
    estimators, counters = {}, {}
    for spec in specs:
        kind = get_kind(spec.kind)
        estimators[spec.name] = kind.build(spec.options, seed, config.task)
        request = kind.count_request(estimators[spec.name])
        if request is not None:
            counters[spec.name] = Counter(request.estimator, request.binarize_input)
    started = time.perf_counter()
    partitions = source.partitions()
    with progress.status("counting the training documents"):
        counts = backend.map_reduce(count_partition, partitions, reading, counters, combine=operator.add,
                                    description="counting the training documents")
    if counts.n == 0:
        raise NoTrainingDocuments(f"{source.name}: no training documents (every document went to the test or "
                                  "validation part, or the data are empty)")
    counting_seconds = time.perf_counter() - started
    fitted, seconds = {}, {}
    for spec in specs:
        kind = get_kind(spec.kind)
        trainer = SourceTrainer(spec.name, reading, partitions, counts, backend, documents.shuffle_buffer)
        started = time.perf_counter()
        try:
            with progress.status(f"fitting {labels.get(spec.name, spec.name)}"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = kind.fit_streamed(estimators[spec.name], spec.options, fitted, trainer)
                model.weights_  # noqa: B018  (built now, so fit time includes it)
        except MlnbError as error:
            raise MlnbError(f"models.{spec.name}: {error}") from None
        fitted[spec.name] = model
        seconds[spec.name] = time.perf_counter() - started
    return Fitted(fitted, seconds, counts.positives, counts.n, counts.nnz, counting_seconds)


class SourceTrainer:
    """The ``StreamTrainer`` (``mlnb.models.registry``) of one model over a training source: the
    counting pass's sums, and minibatch passes here or on Dask (module docstring)."""

    def __init__(self, name: str, reading: Reading, partitions: list, counts: TrainingCounts, backend,
                 buffer_chunks: int):
        self.name, self.reading, self.partitions, self.counts = name, reading, partitions, counts
        self.backend, self.buffer_chunks = backend, buffer_chunks
        self.n_features = reading.source.n_features
        self.n_categories = reading.source.n_categories

    def label_counts(self) -> tuple[np.ndarray, int]:
        return self.counts.positives, self.counts.n

    def naive_bayes(self, request: CountRequest):
        return finished_naive_bayes(request.estimator, self.counts.nb.get(self.name), self.n_features)

    def sum_over_chunks(self, function, *args, binarize_input: bool = False):
        total = self.backend.map_reduce(sum_partition, self.partitions, self.reading, bool(binarize_input), function,
                                        args, combine=add_or_none, description="a full pass")
        if total is None:
            raise NoTrainingDocuments(f"{self.reading.source.name}: no training documents")
        return total

    def minibatch(self, engine, *, binarize_input: bool = False, scale=None, coef_init=None, intercept_init=None):
        job = LogisticJob(self.reading, engine, bool(binarize_input), scale, self.buffer_chunks)
        if self.backend.name == "local":
            return fit_logistic_here(job, self.partitions, self.counts, coef_init, intercept_init)
        return _fit_mixed(self.backend, job, self.partitions, self.counts, coef_init, intercept_init)


def _start_state(engine, V: int, K: int, counts: TrainingCounts, coef_init=None, intercept_init=None) -> dict:
    """The state every worker starts the first pass from: W = coef_init or 0, b = intercept_init
    or the training priors, no AdaGrad history (what ``fit`` starts from)."""
    W = np.zeros((V, K), dtype=np.float32) if coef_init is None else np.array(coef_init, dtype=np.float32)
    b = prior_log_odds(counts.positives, counts.n).astype(np.float32) if intercept_init is None else \
        np.array(intercept_init, dtype=np.float32)
    adagrad = engine.updater == "adagrad"
    return {"weights": W, "bias": b, "S": np.zeros((V, K), dtype=np.float32) if adagrad else None,
            "Sb": np.zeros(K, dtype=np.float32), "t": 0, "passes": 0, "rng": None,
            "category_counts": (counts.positives, counts.n), "start_loss": None, "reference_loss": None,
            "task": engine.task, "updater": engine.updater}


def _fit_mixed(backend, job: LogisticJob, partitions, counts: TrainingCounts, coef_init=None, intercept_init=None):
    """Per pass, every group of partitions from the same state on a worker, then their
    document-weighted average (parameter mixing)."""
    source = job.reading.source
    engine = clone(job.estimator)
    state = _start_state(engine, source.n_features, source.n_categories, counts, coef_init, intercept_init)
    history = []
    groups = worker_groups(partitions, backend.n_workers)  # one trainer per worker: the fewest models to mix
    for epoch in range(1, engine.npasses + 1):
        started = time.perf_counter()
        mixed = backend.map_reduce(lr_pass_partition, groups, job, state, epoch, combine=mix,
                                   description=f"LR pass {epoch}")
        state = {**mixed.state, "passes": epoch}
        seconds = time.perf_counter() - started
        history.append({"pass": epoch, "seconds": seconds, "docs_per_second": mixed.documents / seconds,
                        "trainers": len(groups)})
        progress.log(f"LR pass {epoch}/{engine.npasses} on {backend.n_workers} Dask workers: {mixed.documents:,} "
                     f"documents in {seconds:.1f} s, {mixed.documents / seconds:,.0f} docs/s (parameter mixing of "
                     f"{len(groups)} trainers)")
    engine.set_state(state)
    if job.scale is not None:  # the state holds W′ of W = R ∘ W′
        engine.weights_prime_, engine.weights_ = engine.weights_, job.scale * engine.weights_
    engine.history_ = history
    return engine
