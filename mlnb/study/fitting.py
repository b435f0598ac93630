r"""Fit every model of a study from training documents, in memory or streamed.

In memory each estimator's own ``fit(X, Y)`` runs. Streamed, each model learns the way its kind
declares (``ModelKind.fits_from``), through one ``StreamTrainer`` over the source:

1. one counting pass over the training chunks for every model at once: the label counts
   N (K,), n and the Naive Bayes counts each model asks for (``ModelKind.count_request``);
   all are sums, so the result is the in-memory counts exactly, on any engine:

       N = Σ_p N_p,   n = Σ_p n_p,   counts = Σ_p counts_p

2. each model's ``fit_streamed`` hook: from the counts (Naive Bayes, the prior), from the counters of
   the (word, category) pairs that occur (``StreamTrainer.count_pairs``: sparse Naive Bayes, in memory
   under the model's max_count_memory, out of core beyond it), by full passes whose
   sums a full-batch solver needs (``StreamTrainer.sum_over_chunks``: LR with ``solver = "lbfgs"``,
   the same fixed reduction tree here and on Dask), or by passes of minibatches
   (``StreamTrainer.minibatch``). In one process the minibatch solver steps through the chunks in order,
   exactly as through the documents in memory (up to the shuffle, which stays within
   ``data.shuffle_buffer`` chunks; with ``shuffle = false`` it is ``fit`` bit for bit). On Dask
   minibatch LR runs by default on one worker, the one-machine minibatch solver over every partition in order
   (``engine.minibatch = "one_worker"``: the same numbers as here, NB and scoring still spread over
   the workers). With ``engine.minibatch = "mixing"`` a pass runs in rounds (iterative parameter
   mixing, Zinkevich et al. 2010 / McDonald et al. 2010): in each round every worker runs the engine over its next piece of the training data
   from the same state θ, and the states are averaged, weighted by documents,

       θ ← Σ_w n_w·θ_w / Σ_w n_w            θ = (W, b, AdaGrad sums, step count, schedule sums)

   A piece is about ``engine.mix_every`` minibatches: shards are cut into row ranges of that
   size (``mixing_pieces``); a source read a whole file at a time mixes after each file, and
   says so in one warning when that is far rarer than asked.

A kind that needs every document in memory (``fits_from = "memory"``) is refused in one line
when the documents are streamed.
"""

from __future__ import annotations

import operator
import shutil
import tempfile
import time
import warnings
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from sklearn.base import clone

from mlnb import progress, timings
from mlnb.config import StudyConfig, fit_order
from mlnb.models.array.fitting import device_for
from mlnb.study.documents import Documents
from mlnb.study.tasks import (Counter, LogisticJob, PartitionMatrices, Reading, TrainingCounts, add_or_none,
                               chunk_pairs, count_partition, finished_naive_bayes, fit_logistic_here,
                               fit_logistic_on_worker, lr_pass_partition, mix, sum_partition, worker_groups)
from mlnb.errors import MlnbError, MlnbWarning
from mlnb.models import KINDS, get_kind
from mlnb.models._linear import prior_log_odds
from mlnb.models.logistic.minibatch import sums_shape
from mlnb.models.naive_bayes.count_store import STORE_PREFIX, CountAggregator, CountStore
from mlnb.models.naive_bayes.sparse_dask import count_on_dask
from mlnb.models.registry import CountRequest


#: how a streamed model trained on Dask, as its ``dask_training_`` records it (summary.json and the report say it):
#: "one_worker" the one-machine minibatch solver on one worker, "mixing" iterative parameter mixing of every
#: worker's trainer, "sums" full passes whose sums every worker adds to (L-BFGS)
DASK_TRAINING = ("one_worker", "mixing", "sums")

#: bytes a (word, category) counter holds in memory, an int64 key and a float64 value (as the budget of
#: ``count_store.CountAggregator`` counts them)
COUNTER_PAIR_BYTES = 16

#: warn when the data allow mixing only this many times more rarely than engine.mix_every asks
WARN_MINIBATCHES_BETWEEN_MIXING = 4


class NoTrainingDocuments(MlnbError):
    """A streamed training part turned out empty (known only once it was read)."""


@dataclass(eq=False)
class Fitted:
    """What fitting gives: the estimators and their fit seconds by model name, and the training
    documents' label counts (N (K,) float64, n) and stored values. Streamed, the one counting pass
    that every model shares is ``counting_seconds``, outside each model's own seconds (as reading
    the data is, in memory). A model's seconds leave out numba's compiling during its fit (the first
    run's, ``timings.Stopwatch``), which is ``compile_seconds``."""

    models: dict
    seconds: dict
    positives: np.ndarray
    n: int
    nnz: int
    counting_seconds: float = 0.0
    compile_seconds: dict = field(default_factory=dict)


def built_weights(kind, estimator):
    """The fitted ``estimator``'s weights, which a lazy model (Naive Bayes) builds when first asked: W (V × K) of a
    kind with dense weights, b (K,) of one with sparse weights (its corrections and defaults are built with it)."""
    return estimator.weights_ if kind.weights == "dense" else estimator.bias_


def label_counts(Y) -> np.ndarray:
    """(K,) float64 documents per category of a 0/1 matrix (from integer counts)."""
    return np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()


def training_counts(train: Documents, backend) -> tuple[np.ndarray, int, int, float]:
    """(N (K,), n, nnz, seconds of the counting pass) of the training documents without fitting: from Y in memory
    (no pass: 0 seconds), by a counting pass when streamed (the split's models were fitted on a part of them, the
    counts are of all)."""
    if train.in_memory:
        return label_counts(train.Y), train.n_documents, int(train.X.nnz), 0.0
    started = time.perf_counter()
    counts = backend.map_reduce(count_partition, train.source.partitions(), Reading(train.source, train.chunk_size),
                                {}, combine=operator.add, description="counting the training documents")
    return counts.positives, counts.n, counts.nnz, time.perf_counter() - started


def monitored_set(train: Documents, evaluation: Documents) -> tuple | None:
    """(X, Y) of the evaluation documents, whose loss a kind that monitors its passes reports (its
    ``ModelKind.fit_arguments``), when both parts are held in memory; None when either is streamed."""
    return (evaluation.X, evaluation.Y) if train.in_memory and evaluation.in_memory else None


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
    fitted, seconds, compiling = {}, {}, {}
    X, Y = documents.X, documents.Y
    device = device_for(config.engine.device)  # the array device (engine.device = "gpu"), or None
    for spec in specs:
        kind = get_kind(spec.kind)
        estimator = kind.build(spec.options, spec.training_seed(seed), config.task)
        try:
            with progress.status(f"fitting {labels.get(spec.name, spec.name)}"), warnings.catch_warnings(), \
                    timings.Stopwatch() as watch:
                warnings.simplefilter("ignore")  # untrainable categories are reported, not warned
                arguments = kind.fit_arguments(spec.options, fitted, eval_set)
                on_device = None if device is None else device.fit(kind, estimator, X, Y, config.task, arguments)
                if on_device is None:  # the kind runs on the CPU only (ModelKind.fit_on_device), or these options do
                    estimator.fit(X, Y, **arguments)
                else:
                    estimator = on_device
                built_weights(kind, estimator)  # a lazy model (Naive Bayes) builds W here, so fit time includes it
        except MlnbError as error:
            raise MlnbError(f"models.{spec.name}: {error}") from None
        fitted[spec.name] = estimator
        seconds[spec.name], compiling[spec.name] = watch.seconds, watch.compile_seconds
    return Fitted(fitted, seconds, label_counts(Y), X.shape[0], int(X.nnz), compile_seconds=compiling)


def _fit_streamed(config, specs, documents, seed: int, labels: dict, backend) -> Fitted:
    source = documents.source
    reading = Reading(source, documents.chunk_size)
    estimators, counters = {}, {}
    for spec in specs:
        kind = get_kind(spec.kind)
        estimators[spec.name] = kind.build(spec.options, spec.training_seed(seed), config.task)
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
    fitted, seconds, compiling = {}, {}, {}
    for spec in specs:
        kind = get_kind(spec.kind)
        trainer = SourceTrainer(spec.name, reading, partitions, counts, backend, documents.shuffle_buffer,
                                config.engine.mix_every, config.engine.minibatch, config.engine.spill_folder or None)
        try:
            with progress.status(f"fitting {labels.get(spec.name, spec.name)}"), warnings.catch_warnings(), \
                    timings.Stopwatch() as watch:
                warnings.simplefilter("ignore")  # untrainable categories are reported, not warned
                warnings.simplefilter("default", MlnbWarning)  # what a user should change (e.g. Dask mixing)
                model = kind.fit_streamed(estimators[spec.name], spec.options, fitted, trainer)
                built_weights(kind, model)  # built now, so fit time includes it
            if trainer.ran is not None:
                model.dask_training_ = trainer.ran
        except MlnbError as error:
            raise MlnbError(f"models.{spec.name}: {error}") from None
        fitted[spec.name] = model
        seconds[spec.name], compiling[spec.name] = watch.seconds, watch.compile_seconds
    return Fitted(fitted, seconds, counts.positives, counts.n, counts.nnz, counting_seconds, compiling)


class SourceTrainer:
    """The ``StreamTrainer`` (``mlnb.models.registry``) of one model over a training source: the
    counting pass's sums, and minibatch passes here or on Dask (module docstring)."""

    def __init__(self, name: str, reading: Reading, partitions: list, counts: TrainingCounts, backend,
                 buffer_chunks: int, mix_every: int, minibatch: str, count_folder: str | None = None):
        self.name, self.reading, self.partitions, self.counts = name, reading, partitions, counts
        self.backend, self.buffer_chunks, self.mix_every, self.where = backend, buffer_chunks, mix_every, minibatch
        self.count_folder = count_folder  # where counters beyond their budget go (engine.spill_folder; None: temp)
        self.n_features = reading.source.n_features
        self.n_categories = reading.source.n_categories
        self.ran = None  # how the model trained on Dask (DASK_TRAINING), recorded for the report

    def _record(self, how: str) -> None:
        if not self.backend.sequential:  # spread over workers: how is worth reporting
            self.ran = how

    def label_counts(self) -> tuple[np.ndarray, int]:
        return self.counts.positives, self.counts.n

    def naive_bayes(self, request: CountRequest):
        return finished_naive_bayes(request.estimator, self.counts.nb.get(self.name), self.n_features)

    def sum_over_chunks(self, function, *args, binarize_input: bool = False):
        total = self.backend.map_reduce(sum_partition, self.partitions, self.reading, bool(binarize_input), function,
                                        args, combine=add_or_none, description="a full pass")
        self._record("sums")
        if total is None:
            raise NoTrainingDocuments(f"{self.reading.source.name}: no training documents")
        return total

    def count_pairs(self, presence: bool, max_count_memory: float):
        """Every training chunk's (word, category) counters under ``max_count_memory`` MiB (16 bytes a pair): a
        ``SparseCounts`` while they fit, beyond it a ``CountStore`` in a new folder under engine.spill_folder (or
        the system's temporary folder), deleted once no model uses it. In this process the chunks are added in
        order (``count_store.CountAggregator``); on Dask each worker counts whole partitions and the pairs are
        reduced by word range on the workers, each range written as a part of a store
        (``sparse_dask.count_on_dask``), which is read back into memory when it fits the budget."""
        if self.backend.sequential:  # one aggregator, shared by the chunks in order
            aggregator = CountAggregator(self.n_features, self.n_categories, bool(presence), max_count_memory,
                                         self.count_folder)
            for partition in self.partitions:
                for chunk in self.reading.chunks(partition):
                    aggregator.add(chunk_pairs(chunk.X, chunk.Y, bool(presence)))
            counts = aggregator.finish()
        else:
            folder = Path(tempfile.mkdtemp(prefix=STORE_PREFIX, dir=self.count_folder))
            try:
                counts = count_on_dask(self.backend.client, PartitionMatrices(self.reading, tuple(self.partitions)),
                                       range(len(self.partitions)), self.n_features, self.n_categories,
                                       bool(presence), folder=folder)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            if counts.n_pairs * COUNTER_PAIR_BYTES <= max_count_memory * 2**20:  # they fit: held here
                counts = counts.load()
                shutil.rmtree(folder, ignore_errors=True)
            self._record("sums")
        if isinstance(counts, CountStore):  # read by the model's scoring until the study lets go of it
            weakref.finalize(counts, shutil.rmtree, counts.folder, True)
        if counts.n == 0:
            raise NoTrainingDocuments(f"{self.reading.source.name}: no training documents")
        return counts

    def minibatch(self, engine, *, binarize_input: bool = False, scale=None, coef_init=None, intercept_init=None):
        job = LogisticJob(self.reading, engine, bool(binarize_input), scale, self.buffer_chunks)
        if self.backend.sequential:  # the one-machine minibatch solver, here
            return fit_logistic_here(job, self.partitions, self.counts, coef_init, intercept_init)
        # the one-machine minibatch solver on a worker: the same numbers as here (and always for a model with no state to
        # mix, e.g. solver = "svrg")
        if self.where == "one_worker" or not getattr(engine, "mixes_parameters", True):
            self._record("one_worker")
            [engine] = self.backend.map(fit_logistic_on_worker, [self.partitions], job, self.counts, coef_init,
                                        intercept_init, description="LR on one worker")
            return engine
        self._record("mixing")
        return _fit_mixed(self.backend, job, self.partitions, self.counts, coef_init, intercept_init,
                          mix_every=self.mix_every)


def _start_state(engine, V: int, K: int, counts: TrainingCounts, coef_init=None, intercept_init=None) -> dict:
    """The state every worker starts the first pass from: W = coef_init or 0, b = intercept_init
    or the training priors, no AdaGrad history (what ``fit`` starts from)."""
    W = np.zeros((V, K), dtype=np.float32) if coef_init is None else np.array(coef_init, dtype=np.float32)
    b = prior_log_odds(counts.positives, counts.n).astype(np.float32) if intercept_init is None else \
        np.array(intercept_init, dtype=np.float32)
    sums = sums_shape(engine.updater, V, K)
    return {"weights": W, "bias": b, "S": None if sums is None else np.zeros(sums, dtype=np.float32),
            "Sb": np.zeros(K, dtype=np.float32), "t": 0, "passes": 0, "rng": None,
            "category_counts": (counts.positives, counts.n), "start_loss": None, "reference_loss": None,
            "task": engine.task, "updater": engine.updater}


def mixing_pieces(partitions: list, documents_per_piece: int, reads_row_ranges: bool) -> list:
    """The partitions cut into row ranges of at most ``documents_per_piece`` documents where the source
    reads row ranges (``ChunkSource.reads_row_ranges``: shards) and a partition knows its size, else whole."""
    pieces = []
    for partition in partitions:
        n = partition.n_documents
        stop = partition.stop if partition.stop is not None else None if n is None else partition.start + n
        if not reads_row_ranges or n is None or stop is None or n <= documents_per_piece:
            pieces.append(partition)
            continue
        for start in range(partition.start, stop, documents_per_piece):
            end = min(start + documents_per_piece, stop)
            pieces.append(replace(partition, start=start, stop=end, n_documents=end - start))
    return pieces


def _fit_mixed(backend, job: LogisticJob, partitions, counts: TrainingCounts, coef_init=None, intercept_init=None, *,
               mix_every: int):
    """Iterative parameter mixing: each pass in rounds; in a round every worker runs the engine over its
    next piece of the training data (about ``mix_every`` minibatches) from the same state, and the
    states are averaged, weighted by documents."""
    source = job.reading.source
    engine = clone(job.estimator)
    state = _start_state(engine, source.n_features, source.n_categories, counts, coef_init, intercept_init)
    history = []
    documents_per_piece = max(1, int(mix_every) * int(engine.batch_size))
    train_share = counts.n / max(1, sum(p.n_documents or 0 for p in partitions)) if \
        all(p.n_documents for p in partitions) else 1.0  # a selected (train) part reads a share of each range
    pieces = mixing_pieces(partitions, max(1, round(documents_per_piece / max(train_share, 1e-9))),
                           source.reads_row_ranges)
    groups = worker_groups(pieces, backend.n_workers)  # one trainer per worker: the fewest models to mix
    rounds = max(len(parts) for _, parts in groups)
    between = counts.n / max(1, len(groups) * rounds) / engine.batch_size  # minibatches per trainer per round
    if len(groups) > 1 and between > WARN_MINIBATCHES_BETWEEN_MIXING * mix_every:
        warnings.warn(MlnbWarning(
            f"LR on {len(groups)} Dask workers mixes its parameters every ~{between:,.0f} minibatches (each worker's "
            f"partition is read whole), not every engine.mix_every = {mix_every}; such sparse mixing costs accuracy: "
            "give the data as shards (mlnb convert), whose row ranges can be split, or use solver = 'lbfgs'"))
    for epoch in range(1, engine.npasses + 1):
        started = time.perf_counter()
        documents = 0
        for r in range(rounds):
            work = [(number, parts[r:r + 1], r) for number, parts in groups if r < len(parts)]
            mixed = backend.map_reduce(lr_pass_partition, work, job, state, epoch, combine=mix,
                                       description=f"LR pass {epoch}, round {r + 1}/{rounds}")
            state = {**mixed.state, "passes": epoch - 1}
            documents += mixed.documents
        state["passes"] = epoch
        seconds = time.perf_counter() - started
        history.append({"pass": epoch, "seconds": seconds, "docs_per_second": documents / seconds,
                        "trainers": len(groups), "mixing_rounds": rounds})
        progress.log(f"LR pass {epoch}/{engine.npasses} on {backend.n_workers} Dask workers: {documents:,} "
                     f"documents in {seconds:.1f} s, {documents / seconds:,.0f} docs/s (parameter mixing of "
                     f"{len(groups)} trainers, {rounds} rounds)")
    engine.set_state(state)
    if job.scale is not None:  # the state holds W′ of W = R ∘ W′
        engine.weights_prime_, engine.weights_ = engine.weights_, job.scale * engine.weights_
    engine.history_ = history
    return engine
